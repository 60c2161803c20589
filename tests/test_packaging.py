"""The pins. requirements.txt (the app and training) and requirements-test.txt (the tests) are their one source;
pyproject.toml (`pip install -e .`: the `roberta` package alone) repeats the package's, and every third-party
module the code imports has its version fixed by them."""
import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ["demo", "roberta", "train", "scripts", "tests", "benchmarks"]


def pins(*files) -> dict[str, Requirement]:
    """The requirements files' lines, by canonical package name."""
    found = {}
    for file in files:
        for line in (ROOT / file).read_text(encoding="utf-8").splitlines():
            if line.split("#")[0].strip():
                requirement = Requirement(line.split("#")[0])
                found[canonicalize_name(requirement.name)] = requirement
    return found


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def by_name(requirements) -> dict[str, str]:
    return {canonicalize_name(r.name): str(r) for r in map(Requirement, requirements)}


def test_pyprojects_pins_are_the_requirements_files():
    project = pyproject()["project"]
    core, convert = by_name(project["dependencies"]), by_name(project["optional-dependencies"]["convert"])
    source = {name: str(r) for name, r in pins("requirements.txt", "requirements-test.txt").items()}
    differ = {pin: source.get(name) for name, pin in (core | convert).items() if source.get(name) != pin}
    assert not differ, (f"pyproject.toml pins {list(differ)}, requirements*.txt {list(differ.values())}: "
                        "requirements*.txt are the pins' source: update pyproject.toml to match")
    assert set(core) <= set(pins("requirements.txt")) and set(convert) == {"transformers"}


def test_pyproject_installs_the_roberta_package_alone_on_the_readmes_python():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    config = pyproject()
    oldest = re.search(r"Python (3\.\d+) or newer", readme).group(1)
    assert config["project"]["requires-python"] == f">={oldest}"
    assert config["tool"]["setuptools"]["packages"] == ["roberta"]
    # what the package imports is installed with it: the core, and transformers (roberta.convert) as the extra
    core = set(by_name(config["project"]["dependencies"]))
    # numpy: not imported, but torch warns "Failed to initialize NumPy" without it
    assert distributions_imported_by(ROOT.glob("roberta/*.py")) == core - {"numpy"} | {"transformers"}
    assert "transformers" not in core  # the app does not need it


def test_pytest_and_ruff_read_their_own_files(request):
    """pyproject.toml is for pip: pytest.ini and ruff.toml keep the settings (a [tool.pytest...] or [tool.ruff]
    there would be read by nothing, or take over if those files were deleted)."""
    assert set(pyproject()["tool"]) == {"setuptools"}
    assert Path(request.config.inipath) == ROOT / "pytest.ini"
    shown = subprocess.run([sys.executable, "-m", "ruff", "check", "--show-settings", "pyproject.toml"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert f'Settings path: "{ROOT / "ruff.toml"}"' in shown.stdout, shown.stderr


def imported_modules(paths) -> set[str]:
    """The top-level names the files import (lazy imports in functions too), less the standard library's and the
    project's own."""
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names.add(node.module.split(".")[0])
    own = {"app", *FOLDERS, *(path.stem for path in code(*FOLDERS))}  # tests' helpers, one benchmark's another's
    return names - set(sys.stdlib_module_names) - own


def distributions_imported_by(paths) -> set[str]:
    providers = importlib.metadata.packages_distributions()
    modules = imported_modules(paths)
    unknown = modules - providers.keys()
    assert not unknown, f"imported, and installed by no package: {sorted(unknown)}"
    return {canonicalize_name(dist) for module in modules for dist in providers[module]}


def fixed_by(requirements: dict[str, Requirement]) -> set[str]:
    """The packages whose version the pins fix: the pinned ones, and those a pinned package pins exactly (gradio's
    gradio-client), and so on down."""
    fixed, todo = set(), list(requirements)
    while todo:
        name = todo.pop()
        if name in fixed:
            continue
        fixed.add(name)
        for line in importlib.metadata.requires(name) or []:
            requirement = Requirement(line)
            applies = not requirement.marker or requirement.marker.evaluate({**default_environment(), "extra": ""})
            if applies and [spec.operator for spec in requirement.specifier] == ["=="]:
                todo.append(canonicalize_name(requirement.name))
    return fixed


def code(*folders):
    return [path for folder in folders for path in (ROOT / folder).rglob("*.py") if "__pycache__" not in path.parts]


def test_every_imported_package_has_its_version_fixed_by_the_pins():
    """starlette (demo/request_guards.py), PIL and yaml (tests) came only within gradio's ranges: a gradio release could
    change the upload guard's starlette unseen."""
    optional = {"transformers"}  # roberta.convert's, which names its pip command (requirements-test.txt pins it)
    loose = (distributions_imported_by([ROOT / "app.py", *code("demo", "roberta", "train")]) - optional
             - fixed_by(pins("requirements.txt")))
    assert not loose, f"imported by the app or training, and not pinned in requirements.txt: {sorted(loose)}"
    # the tests, benchmarks and scripts (screenshots: playwright) may need requirements-test.txt too
    everything = pins("requirements.txt", "requirements-test.txt")
    loose = distributions_imported_by(code("tests", "benchmarks", "scripts")) - fixed_by(everything)
    assert not loose, f"imported by the tests or scripts, and not pinned in requirements*.txt: {sorted(loose)}"


def test_gradio_client_is_gradios_to_pin():
    """gradio pins gradio-client exactly: a pin of ours as well could only disagree with it after a gradio bump."""
    assert "gradio-client" in fixed_by({"gradio": Requirement("gradio")})
    assert "gradio-client" not in pins("requirements.txt", "requirements-test.txt")
