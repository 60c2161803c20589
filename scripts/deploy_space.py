"""Publish the app as a Hugging Face Space (Gradio SDK) with the shipped models.

    python -m scripts.deploy_space --repo-id USER/roberta-from-scratch --dry-run   # what would go up, and its size
    python -m scripts.deploy_space --repo-id USER/roberta-from-scratch [--private] [--token hf_...]

Uploads what `python app.py` needs and nothing else (SPACE_FILES: the app, the `demo` and `roberta`
packages, `assets/` with the models, LICENSE, README.md, whose front matter configures the Space, packages.txt, the
Debian packages the Space installs (fonts with CJK and emoji glyphs for the figures' labels), and `docs/`, which it
links to), and the files that Markdown links to (CONTRIBUTING.md, the training sources the docs walk through:
`linked_files`), so that no link of the Space's pages is a 404, never a pickle (`train.push`'s
PICKLE_PATTERNS), with `huggingface_hub`: `create_repo(repo_type="space", space_sdk="gradio")`, then one
`upload_folder` commit (one build of the Space) that also deletes what a redeploy no longer has. The Space's
requirements.txt is its own (`space_requirements`): a Space installs it with pip from PyPI, where torch is the
CUDA build of several GB, so it takes torch's CPU build from PyTorch's index, and leaves out what only the
training code imports. The token defaults to `hf auth login`'s or HF_TOKEN. Offline, or when the Hub refuses,
exit code 2 with a message that says which (`train.push.call_hub`).
"""
from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

from train.arguments import script_parser
from train.model_card import linked_files
from train.push import (PICKLE_PATTERNS, PushError, call_hub, check_repo_id, hub_endpoint, pickles, pickles_note,
                        upload_files)
from train.runtime import exit_code, report_user_error

ROOT = Path(__file__).resolve().parent.parent
# packages.txt: the Debian packages a Space installs with apt (fonts for the figures' CJK and emoji labels)
SPACE_FILES = ["app.py", "README.md", "LICENSE", "requirements.txt", "packages.txt", "demo/**", "roberta/**",
               "assets/**", "docs/**"]
NOT_APP_FILES = ["**/__pycache__/**", "*.pyc", "*.pyi", "**/.*"]  # .pyi: the stubs Gradio writes beside its components
SPACE_IGNORE = NOT_APP_FILES + PICKLE_PATTERNS
REQUIREMENTS = "requirements.txt"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
NOT_ON_THE_SPACE = {"datasets", "tqdm"}  # imported by train/ only, which the app never imports


def space_files(root=ROOT) -> list[Path]:
    """The files of `root` the Space gets (its requirements.txt written for it: `space_requirements`): SPACE_FILES,
    and every file of `root` that their Markdown links, and the Markdown of those links, in turn (CONTRIBUTING.md,
    `train/pretrain.py`), SPACE_IGNORE's aside."""
    from huggingface_hub.utils import filter_repo_objects

    root = Path(root)
    files = set(upload_files(root, SPACE_FILES, SPACE_IGNORE))
    pages = [path for path in files if path.suffix == ".md"]
    while pages:
        page = pages.pop()
        linked = [p for p in linked_files((root / page).read_text(encoding="utf-8"), page)
                  if not p.startswith("..") and (root / p).is_file() and Path(p) not in files]
        for path in map(Path, filter_repo_objects(linked, ignore_patterns=SPACE_IGNORE)):
            files.add(path)
            pages += [path] if path.suffix == ".md" else []
    return sorted(files)


def pickles_left_out(root=ROOT) -> list[Path]:
    """The pickle files of SPACE_FILES that the Space does not get, to name."""
    return pickles(root, SPACE_FILES, NOT_APP_FILES)


def space_requirements(text: str) -> str:
    """The Space's requirements.txt from the project's: torch's CPU build (`torch==V+cpu` from TORCH_CPU_INDEX; the
    PyPI wheel pip would take is the CUDA build, several GB on a CPU Space) and the other pins, less the packages
    only the training code imports (NOT_ON_THE_SPACE)."""
    lines = ["# The Space's dependencies: written by scripts.deploy_space from the project's requirements.txt",
             f"--extra-index-url {TORCH_CPU_INDEX}"]
    for line in text.splitlines():
        pin = line.split("#")[0].strip()
        name = re.split(r"[=<>!~\[; ]", pin, maxsplit=1)[0].lower()
        if not pin or name in NOT_ON_THE_SPACE:
            continue
        if name == "torch" and "==" in pin and "+" not in pin:
            pin += "+cpu"
        lines.append(pin)
    return "\n".join(lines) + "\n"


def stage(root, folder: Path) -> list[Path]:
    """The Space's files copied into `folder` (hard links where the file system allows), its requirements.txt
    written for it; returns their paths relative to `folder`."""
    files = space_files(root)
    for path in files:
        src, dst = Path(root) / path, folder / path
        dst.parent.mkdir(parents=True, exist_ok=True)
        if path.as_posix() == REQUIREMENTS:
            dst.write_text(space_requirements(src.read_text(encoding="utf-8")), encoding="utf-8")
            continue
        try:
            dst.hardlink_to(src)
        except OSError:
            shutil.copy2(src, dst)
    return files


def deploy(repo_id: str, root=ROOT, token: str | None = None, private: bool = False,
           commit_message: str = "Update the app") -> str:
    """Create the Space (if needed) and upload the app to it; returns its URL."""
    from huggingface_hub import HfApi

    check_repo_id(repo_id)
    if not (Path(root) / "app.py").is_file():
        raise PushError(f"{root} has no app.py: run from the project's root")
    api = HfApi(endpoint=hub_endpoint(), token=token)

    def requests():
        url = api.create_repo(repo_id, private=private, exist_ok=True, repo_type="space", space_sdk="gradio")
        with tempfile.TemporaryDirectory(prefix="space-") as folder:
            stage(root, Path(folder))
            # one commit: the files, and "*" deleting every file of the Space's they no longer include (a figure
            # the app shows only when it exists stayed there); .gitattributes is never deleted
            api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="space", commit_message=commit_message,
                              delete_patterns=["*"])
        return url

    return str(call_hub(repo_id, requests))


def main(argv=None) -> int:
    p = script_parser("scripts.deploy_space", __doc__)  # the docstring's summary above the options, once
    p.add_argument("--repo-id", required=True, help="USER/NAME of the Space")
    p.add_argument("--private", action="store_true", help="create the Space private")
    p.add_argument("--token", default=None, help="Hub token (default: HF_TOKEN or the saved login)")
    p.add_argument("--message", default="Update the app", help="commit message")
    p.add_argument("--dry-run", action="store_true", help="list the files and their total size; upload nothing")
    args = p.parse_args(argv)
    try:
        check_repo_id(args.repo_id)  # the dry run too: it names the Space it would create
    except PushError as err:
        return report_user_error(err)
    if note := pickles_note(pickles_left_out()):
        print(note, file=sys.stderr)
    if args.dry_run:
        files = space_files()
        for path in files:
            own = path.as_posix() == REQUIREMENTS
            print(f"{path} (the Space's own: torch's CPU build, no training packages)" if own else path)
        total = sum((ROOT / path).stat().st_size for path in files)
        print(f"{len(files)} files, {total / 2**20:.1f} MiB -> https://huggingface.co/spaces/{args.repo_id}")
        return 0
    try:
        url = deploy(args.repo_id, token=args.token, private=args.private, commit_message=args.message)
    except PushError as err:
        return report_user_error(err)
    print(f"deployed the app -> {url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
