"""The package's import graph: no cycles (lazy imports inside functions count too), and no layer above it."""
import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "roberta"


def imported_modules(path: Path) -> set[str]:
    """What a module of the package imports, anywhere in it: `roberta.x` as "x", the package itself as
    "__init__", anything else by its top-level name ("torch", "train")."""
    dotted = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            dotted |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level and not node.module:  # from . import model
                dotted |= {f"roberta.{alias.name}" for alias in node.names}
                continue
            module = f"roberta.{node.module}" if node.level else node.module
            dotted |= {module} | {f"{module}.{alias.name}" for alias in node.names}  # from roberta import hub
    names = set()
    for name in dotted:
        parts = name.split(".")
        names.add(parts[0] if parts[0] != "roberta" else parts[1] if len(parts) > 1 else "__init__")
    return names


def package_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (`__init__` is the package itself)."""
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    return {m: imported_modules(PACKAGE / f"{m}.py") & modules - {m} for m in modules}


def test_no_import_cycles_in_the_package():
    graph = package_graph()
    assert {"model", "hub", "convert", "loss", "tokenizer"} <= graph.keys()
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError(f"import cycle: {' -> '.join(path[path.index(module):] + [module])}")
        if module in done:
            return
        path.append(module)
        for dependency in sorted(graph[module]):
            visit(dependency)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def test_layers_below_the_model_do_not_import_it():
    graph = package_graph()
    assert "model" not in (graph["hub"] | graph["checkpoint"] | graph["loading"] | graph["devices"] | graph["loss"]
                           | graph["config"] | graph["masking"] | graph["tokenizer"] | graph["inputs"] | graph["files"])
    # no pipelines, tokenizer or convert
    assert graph["model"] <= {"hub", "checkpoint", "loading", "config", "inputs", "loss"}
    assert not graph["inputs"] and not graph["files"]  # the bottom layer: torch (inputs) or the standard library


def test_finding_reading_and_building_a_model_are_separate_layers():
    """roberta/hub.py did six jobs in one module; now finding a model's files (hub) and naming a device (devices)
    import nothing of the package, and reading and writing the files (checkpoint) builds no model (loading)."""
    graph = package_graph()
    assert not graph["hub"] and not graph["devices"]
    assert not graph["checkpoint"] & {"loading", "model"}
    assert "model" not in graph["loading"]  # the model class is passed in


def test_the_package_imports_neither_training_nor_the_app():
    for path in PACKAGE.glob("*.py"):
        assert not imported_modules(path) & {"train", "demo", "app", "scripts", "tests", "conftest"}, path.name


def test_the_app_imports_only_what_the_space_gets():
    """app.py, demo/ and roberta/ (what `scripts.deploy_space` uploads) import no project package the Space
    does not get: train, scripts, tests."""
    root = PACKAGE.parent
    sources = [root / "app.py", *(root / "demo").glob("*.py"), *PACKAGE.glob("*.py")]
    outside = {path.name: imported_modules(path) & {"train", "scripts", "tests"} for path in sources}
    assert not {name: found for name, found in outside.items() if found}


def test_training_imports_neither_the_app_nor_the_scripts():
    """train/ imports no demo/, app or scripts/ (code that needs both the app and training goes in scripts/, which
    may import either), as CONTRIBUTING.md says: nothing checked it."""
    found = {path.name: imported_modules(path) & {"demo", "app", "scripts", "tests", "conftest"}
             for path in (PACKAGE.parent / "train").glob("*.py")}
    assert found and not {name: names for name, names in found.items() if names}


def test_no_command_line_script_imports_gradio_before_it_needs_it():
    """Importing any script of train/ and scripts/ (what `--help` does) loads no Gradio: `scripts.release --help`
    and `scripts.analogy_probe --help` took 8 to 10 s, 5 of them Gradio's import (pulled in by the demo's
    `demo.embedding_view`, through its errors), for a page of options; each now imports the view where it scores."""
    root = PACKAGE.parent
    modules = [f"{path.parent.name}.{path.stem}" for folder in ("train", "scripts")
               for path in sorted((root / folder).glob("*.py")) if path.stem != "__init__"]
    assert "scripts.release" in modules and "scripts.analogy_probe" in modules
    probe = ("import importlib, sys\n"
             f"for name in {modules!r}:\n"
             "    importlib.import_module(name)\n"
             "    assert 'gradio' not in sys.modules, name\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def readme_package_graph() -> dict[str, set[str]]:
    """The `roberta/` part of the README's Architecture diagram: `a -> b, c ; d -> e` pairs, and the modules of
    its "(no roberta imports)" line with none."""
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    diagram = readme[readme.index("  roberta/   "):]
    diagram = diagram[:diagram.index("```")].replace("roberta/", "")
    graph = {}
    for line in diagram.splitlines():
        if "(no roberta imports)" in line:
            graph |= {name.strip(): set() for name in line.replace("(no roberta imports)", "").split(",")}
            continue
        for pair in filter(str.strip, line.split(";")):
            module, imports = pair.split("->")
            graph[module.strip()] = {name.strip() for name in imports.split(",")}
    return graph


def test_the_readme_diagram_is_the_package_graph():
    """The README's Architecture diagram names every module of the package and exactly what each imports of it
    (it had left out `inputs` and `files`, and said `run_metrics` imported nothing)."""
    graph = {module: imports - {"__init__"} for module, imports in package_graph().items() if module != "__init__"}
    assert readme_package_graph() == graph
