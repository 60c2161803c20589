"""scripts.deploy_space: the Space gets what `python app.py` needs and nothing else, through huggingface_hub
(faked here: no network), and a refusal or no network is a user error with a message."""
import io
import re
import subprocess
import warnings
from types import SimpleNamespace

import pytest

from scripts import deploy_space
from train.push import PushError


def test_space_files_are_the_app_and_its_models_only():
    files = {p.as_posix() for p in deploy_space.space_files()}
    for needed in ("app.py", "README.md", "LICENSE", "requirements.txt", "packages.txt", "demo/handlers.py",
                   "roberta/model.py",
                   "assets/mini-roberta-mlm/model.safetensors", "assets/mini-roberta-sst2/config.json",
                   "assets/masking-ablation/results.json"):
        assert needed in files
    assert not [f for f in files if f.split("/")[0] in ("runs", "benchmarks")]
    assert not [f for f in files if "__pycache__" in f or f.endswith((".pyc", ".pyi"))]
    # the README's links to docs/ work on the Space too (they were 404s there)
    assert "docs/pretraining.md" in files and "docs/gpu-training.md" in files
    # of train/, scripts/ and tests/, only the sources the docs link (the training tour's), which the app never imports
    from train.model_card import linked_files

    pages = [f for f in files if f.endswith(".md")]
    linked = {path for page in pages
              for path in linked_files((deploy_space.ROOT / page).read_text(encoding="utf-8"), page)}
    sources = {f for f in files if f.split("/")[0] in ("tests", "train", "scripts")}
    assert "train/pretrain.py" in sources and sources <= linked
    # what git tracks of those folders and of the files linked, nothing more (Gradio writes a .pyi stub beside app.py
    # and demo/components.py)
    tracked = subprocess.run(["git", "ls-files", "app.py", "README.md", "LICENSE", "requirements.txt", "packages.txt",
                              "demo", "roberta", "assets", "docs", *sorted(linked & files)],
                             capture_output=True, text=True, cwd=deploy_space.ROOT)
    if tracked.returncode == 0 and tracked.stdout:  # a git checkout (CI's clean clone is one)
        in_git = set(tracked.stdout.split())
        untracked, left_out = sorted(files - in_git), sorted(in_git - files)
        assert not untracked, f"not tracked by git: {untracked}: git add it (or keep it out of the Space's folders)"
        assert not left_out, (f"tracked by git but not in the Space's files: {left_out}: deleted (git rm it) or left "
                              "out by scripts.deploy_space's SPACE_IGNORE")


def test_every_relative_link_of_the_spaces_pages_resolves_in_the_upload():
    """The Space's README.md, docs/ and model cards linked 23 files it did not get (CONTRIBUTING.md, the train/
    sources the training tour walks through): 404s on the Space's pages. Every relative link of its Markdown is a
    file it gets, or a folder holding some."""
    from train.model_card import linked_files

    files = {p.as_posix() for p in deploy_space.space_files()}
    folders = {parent.as_posix() for p in deploy_space.space_files() for parent in p.parents}
    pages = sorted(f for f in files if f.endswith(".md"))
    assert {"README.md", "CONTRIBUTING.md", "docs/training-tour.md", "assets/mini-roberta-sst2/README.md"} <= set(pages)
    broken = [f"{page} -> {target}" for page in pages
              for target in linked_files((deploy_space.ROOT / page).read_text(encoding="utf-8"), page)
              if target not in files and target not in folders]
    assert not broken, f"the Space's pages link files it does not get: {broken}"


def test_the_space_never_gets_a_pickle(tmp_path):
    """SPACE_IGNORE left out *.pyc alone: a Trainer's training_args.bin, a pytorch_model.bin or a *.pkl under assets/
    went up (train.push's PICKLE_PATTERNS, one list for both)."""
    pickles = ["assets/m/training_args.bin", "assets/m/pytorch_model.bin", "assets/m/sub/x.pkl", "assets/state.pickle",
               "assets/m/model.joblib", "assets/m/optimizer.pt", "demo/cache.pkl"]
    for name in ["app.py", "assets/m/model.safetensors", "assets/m/README.md", *pickles]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    assert {p.as_posix() for p in deploy_space.space_files(tmp_path)} == {"app.py", "assets/m/model.safetensors",
                                                                           "assets/m/README.md"}
    from train.push import PICKLE_PATTERNS

    assert set(PICKLE_PATTERNS) <= set(deploy_space.SPACE_IGNORE)


class FakeApi:
    calls = {}

    def __init__(self, endpoint=None, token=None):
        FakeApi.calls = {"token": token}

    def create_repo(self, repo_id, **kwargs):
        FakeApi.calls["create"] = (repo_id, kwargs)
        return f"https://huggingface.co/spaces/{repo_id}"

    def upload_folder(self, folder_path, repo_id, **kwargs):
        from pathlib import Path

        FakeApi.calls["upload"] = (folder_path, repo_id, kwargs)
        folder = Path(folder_path)  # what the commit holds, read while the folder exists
        FakeApi.calls["files"] = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        FakeApi.calls["requirements"] = (folder / "requirements.txt").read_text(encoding="utf-8")


def test_deploy_creates_a_gradio_space_and_uploads_the_app(monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    url = deploy_space.deploy("someone/demo", token="hf_x", private=True)
    assert url == "https://huggingface.co/spaces/someone/demo" and FakeApi.calls["token"] == "hf_x"
    repo_id, create = FakeApi.calls["create"]
    assert repo_id == "someone/demo" and create["repo_type"] == "space" and create["space_sdk"] == "gradio"
    assert create["private"] is True
    folder, repo_id, upload = FakeApi.calls["upload"]
    assert upload["repo_type"] == "space" and upload["delete_patterns"] == ["*"]  # a redeploy removes what went
    assert FakeApi.calls["files"] == sorted(p.as_posix() for p in deploy_space.space_files())  # one commit, all
    # its own requirements: torch's CPU build (PyPI's is the CUDA one, several GB), no training-only packages
    requirements = FakeApi.calls["requirements"].splitlines()
    assert f"--extra-index-url {deploy_space.TORCH_CPU_INDEX}" in requirements
    assert [r for r in requirements if r.startswith("torch==")] and all(
        r.endswith("+cpu") for r in requirements if r.startswith("torch=="))
    assert not [r for r in requirements if r.split("==")[0] in deploy_space.NOT_ON_THE_SPACE]
    assert pinned_gradio() in requirements


def test_space_requirements_pin_torchs_cpu_build_and_keep_the_other_pins():
    text = "# a comment\ntorch==2.13.0\ntokenizers==0.23.3  # why\n\ndatasets==5.2.0\ntqdm==4.70.1\ngradio==6.31.0\n"
    assert deploy_space.space_requirements(text).splitlines()[1:] == [
        "--extra-index-url https://download.pytorch.org/whl/cpu", "torch==2.13.0+cpu", "tokenizers==0.23.3",
        "gradio==6.31.0"]
    assert "torch==2.13.0+cpu\n" in deploy_space.space_requirements("torch==2.13.0+cpu\n")  # not "+cpu+cpu"


def front_matter(key):
    """A key of README.md's front matter (the Space's settings), as written."""
    front = (deploy_space.ROOT / "README.md").read_text(encoding="utf-8").split("---")[1]
    said = re.search(rf"^{key}: (.+)$", front, re.M)
    assert said, f"README.md's front matter has no {key}"
    return said.group(1)


def pinned_gradio():
    text = (deploy_space.ROOT / deploy_space.REQUIREMENTS).read_text(encoding="utf-8")
    return re.search(r"^gradio==\S+", text, re.M).group(0)


def test_the_spaces_python_installs_the_pins_and_is_the_readmes_minimum():
    """The Space card named no python_version, and a Space's default (3.10) cannot install the pinned numpy and
    matplotlib (Requires-Python >= 3.11): the build failed before app.py ran. The Python the tests run on may be any
    the README supports (3.12 failed an equality with it): the Space's is the oldest the README names, and every
    pin installs on it."""
    import importlib.metadata

    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    said = re.fullmatch(r'"(3\.\d+)"', front_matter("python_version"))  # quoted: 3.10 unquoted would read as 3.1
    assert said, f"python_version: {front_matter('python_version')}: write it quoted, as \"3.11\""
    space_python = said.group(1)
    readme = (deploy_space.ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"Python (3\.\d+) or newer", readme).group(1) == space_python
    refused = {}
    for line in (deploy_space.ROOT / deploy_space.REQUIREMENTS).read_text(encoding="utf-8").splitlines():
        if not line.split("#")[0].strip():
            continue
        pin = Requirement(line.split("#")[0])
        installed = importlib.metadata.metadata(pin.name)
        # the metadata read is the pinned release's (torch's local "+cpu" aside)
        assert pin.specifier.contains(Version(installed["Version"]).public), (
            f"{pin.name} {installed['Version']} is installed, {pin} pinned: pip install -r requirements.txt")
        requires_python = SpecifierSet(installed["Requires-Python"] or "")
        if not requires_python.contains(space_python):
            refused[str(pin)] = str(requires_python)
    assert not refused, f"the Space's Python {space_python} cannot install {refused}"


def test_the_spaces_gradio_is_the_pinned_one():
    """The Space installs gradio==sdk_version before requirements.txt: a gradio bump in one place alone gives the
    Space another gradio than the tests ran (or two pins pip cannot resolve)."""
    assert f"gradio=={front_matter('sdk_version')}" == pinned_gradio(), (
        "README.md's front matter sdk_version and requirements.txt's gradio pin differ: set both to one version")


def test_the_apps_threads_follow_the_containers_cpus(monkeypatch, tmp_path):
    """os.cpu_count() is the host's in a container: on a 2-vCPU Space each request took 4 threads (up to 16 on 2
    CPUs with both queues full). The container's quota and the affinity mask bound it."""
    from demo import models

    quota = tmp_path / "cpu.max"
    monkeypatch.setattr(models, "CGROUP_CPU_MAX", quota)
    monkeypatch.setattr(models.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    quota.write_text("200000 100000\n")
    assert models.available_cpus() == 2
    quota.write_text("50000 100000\n")  # half a CPU: one thread
    assert models.available_cpus() == 1
    quota.write_text("max 100000\n")
    assert models.available_cpus() == 64
    quota.unlink()  # no cgroup v2 file: the affinity mask
    monkeypatch.setattr(models.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert models.available_cpus() == 3


def test_the_command_passes_private_token_and_message_to_the_hub(monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    assert deploy_space.main(["--repo-id", "someone/demo"]) == 0  # the defaults: public, the saved login
    assert FakeApi.calls["token"] is None and FakeApi.calls["create"][1]["private"] is False
    assert FakeApi.calls["upload"][2]["commit_message"] == "Update the app"
    assert deploy_space.main(["--repo-id", "someone/demo", "--private", "--token", "hf_secret",
                              "--message", "The compare tab"]) == 0
    assert FakeApi.calls["token"] == "hf_secret" and FakeApi.calls["create"][1]["private"] is True
    assert FakeApi.calls["upload"][2]["commit_message"] == "The compare tab"
    assert capsys.readouterr().out.strip().endswith("-> https://huggingface.co/spaces/someone/demo")


@pytest.mark.parametrize("error, message", [(OSError("Network is unreachable"), "cannot reach the Hugging Face Hub"),
                                            (None, "the Hub refused the upload")])
def test_no_network_or_a_refusal_is_a_user_error(monkeypatch, capsys, error, message):
    import huggingface_hub
    from huggingface_hub.errors import HfHubHTTPError

    class FailingApi(FakeApi):
        def create_repo(self, repo_id, **kwargs):
            raise error or HfHubHTTPError("403 Forbidden", response=SimpleNamespace(headers={}, status_code=403,
                                                                                   request=None))

    monkeypatch.setattr(huggingface_hub, "HfApi", FailingApi)
    with pytest.raises(PushError, match=message):
        deploy_space.deploy("someone/demo")
    assert deploy_space.main(["--repo-id", "someone/demo"]) == 2
    assert message in capsys.readouterr().err
    assert deploy_space.main(["--repo-id", "not-a-repo-id"]) == 2
    assert "USER/NAME" in capsys.readouterr().err


def test_a_repo_id_the_hub_refuses_is_refused_in_a_dry_run_too(capsys):
    """Was "-> https://huggingface.co/spaces/x y", exit 0."""
    for bad in ("x y", "someone/x y", "someone/-demo", "a/b/c"):
        assert deploy_space.main(["--repo-id", bad, "--dry-run"]) == 2, bad
        err = capsys.readouterr().err
        assert err.startswith("error: --repo-id") and "Traceback" not in err, err


def test_dry_run_lists_the_files_and_their_size(capsys):
    assert deploy_space.main(["--repo-id", "someone/demo", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "app.py" in out and out[-1].endswith("-> https://huggingface.co/spaces/someone/demo")
    assert f"{len(deploy_space.space_files())} files" in out[-1]


def test_the_readme_gives_the_dry_runs_count_and_size():
    files = deploy_space.space_files()
    mib = sum((deploy_space.ROOT / path).stat().st_size for path in files) / 2**20
    readme = (deploy_space.ROOT / "README.md").read_text(encoding="utf-8")
    said = re.search(r"--dry-run\s+# (\d+) files, ([\d.]+) MiB with the models", readme)
    assert said, "the README's deploy_space --dry-run line lost its comment"
    line = readme.count("\n", 0, said.start()) + 1
    assert (int(said.group(1)), float(said.group(2))) == (len(files), round(mib, 1)), (
        f"README.md:{line}'s deploy_space --dry-run comment says {said.group(1)} files, {said.group(2)} MiB; the "
        f"Space's files now make {len(files)} files, {mib:.1f} MiB: update it (python -m scripts.deploy_space "
        "--repo-id a/b --dry-run prints them)")


def test_the_spaces_models_are_the_hub_models_the_app_offers():
    """The Space's front matter lists the Hub models its model boxes offer (`demo.models.KINDS`' suggestions), so
    that the Space page links them and their pages list the Space; none the app no longer offers."""
    import yaml

    from demo.models import KINDS

    front = yaml.safe_load((deploy_space.ROOT / "README.md").read_text(encoding="utf-8").split("---")[1])
    offered = [model for kind in KINDS.values() for model in kind.suggested]
    assert sorted(front.get("models") or []) == sorted(offered), (
        f"README.md's front matter lists models {front.get('models')}; the app offers {offered}: list those")


# the Debian package of each font demo.figures falls back to that packages.txt may name
FONT_PACKAGES = {"fonts-noto-cjk": ["Noto Sans CJK JP", "Noto Sans CJK SC"], "fonts-symbola": ["Symbola"]}


def test_the_spaces_debian_packages_are_fonts_the_figures_fall_back_to():
    """packages.txt, which a Space installs line by line with apt (a line is a package name: no comments), names
    fonts that `demo.figures` falls back to: on a Space without it, a CJK token is drawn by its code, ⟨U+65E5⟩."""
    from demo import figures

    packages = (deploy_space.ROOT / "packages.txt").read_text(encoding="utf-8").splitlines()
    assert packages and all(re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", line) for line in packages), packages
    for package in packages:
        assert package in FONT_PACKAGES, f"packages.txt installs {package}: a font of demo.figures' _FALLBACKS?"
        assert set(FONT_PACKAGES[package]) <= set(figures._FALLBACKS)


def test_with_the_spaces_cjk_font_a_cjk_label_is_drawn_as_itself():
    from demo import figures

    if not figures._INSTALLED & set(FONT_PACKAGES["fonts-noto-cjk"]):
        pytest.skip("no Noto Sans CJK font on this machine (Debian: apt-get install fonts-noto-cjk)")
    assert figures.drawable("東京は日本") == "東京は日本"
    assert figures.short_label("東·2") == "東·2"
    # and measured in it, for the figures' margins and label spacing (it was measured in DejaVu Sans, whose missing
    # glyph's box is another width, with a warning each time): an ideograph is one em wide
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert figures._text_inches("東京", 10) == pytest.approx(2 * 10 / 72 * 1.05, rel=0.02)


def test_with_the_spaces_emoji_font_an_emoji_label_is_drawn_as_itself_and_logs_nothing(caplog):
    """Symbola (fonts-symbola) has emoji to Unicode 9: "🍕·1" is drawn as itself, not as "⟨slice of pizza⟩·1";
    a later emoji is still named. It has no bold face, and a bold title's emoji logged matplotlib's "Failed to
    find font weight bold" once per size: `demo.figures` drops that line."""
    from demo import figures

    if "Symbola" not in figures._INSTALLED:
        pytest.skip("no Symbola font on this machine (Debian: apt-get install fonts-symbola)")
    assert figures.short_label("🍕·1") == "🍕·1" and figures.drawable("😀👍") == "😀👍"
    assert figures.drawable("🫠") == "⟨melting face⟩"  # Unicode 14: no font here has it
    figure = figures.Figure()
    figure.suptitle("Where 🍕 attends", fontweight="bold", fontsize=13.7)  # a size no other test draws
    with caplog.at_level("INFO", logger="matplotlib.font_manager"):
        figure.savefig(io.BytesIO(), format="png")
    assert not [r for r in caplog.records if "Failed to find font weight" in r.getMessage()]
