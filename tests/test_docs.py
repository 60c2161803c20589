"""The README and the lab record in docs/: every relative link and image points at a file that exists, and
every #anchor at a heading of its target (GitHub's slugs), so moving a section cannot leave a dead link."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")   # [text](target) and ![alt](target), across line breaks
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def prose(path):
    """The Markdown without its fenced code blocks (a `# comment` in a bash block is not a heading)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    return {slug(line.lstrip("#")) for line in prose(path).splitlines() if re.match(r"#{1,6} ", line)}


def local_links(path):
    for target in LINK.findall(prose(path)):
        if not re.match(r"[a-z]+:", target):   # http:, https:, mailto: are not checked offline
            yield target


def test_slug_follows_github():
    assert slug("Training on one GPU (issue 16)") == "training-on-one-gpu-issue-16"
    assert slug("Pretraining probes from random weights (issue 11, part 1)") == \
        "pretraining-probes-from-random-weights-issue-11-part-1"


def test_the_readme_links_the_lab_record():
    linked = {Path(t.split("#")[0]).name for t in local_links(ROOT / "README.md")}
    missing = [doc.name for doc in DOCUMENTS[1:] if doc.name not in linked]
    assert not missing, f"docs not linked from the README: {missing}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_relative_links_and_anchors_resolve(document):
    broken = []
    for target in local_links(document):
        file_part, _, anchor = target.partition("#")
        destination = (document.parent / file_part).resolve() if file_part else document
        if not destination.exists():
            broken.append(f"{target}: no file {destination.relative_to(ROOT)}")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no heading #{anchor} in {destination.relative_to(ROOT)}")
    assert not broken, f"{document.name}: " + "; ".join(broken)
