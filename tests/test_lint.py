"""The code passes the project's lint (ruff.toml): no unused imports or names, no test line that asserts nothing."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=ROOT, capture_output=True, text=True)
    assert "No module named ruff" not in result.stderr, \
        "ruff is a test dependency: pip install -r requirements-test.txt"
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_catches_a_comparison_that_asserts_nothing(tmp_path):
    """The lint's point, checked: the line-continuation slip this project once made (an assert of a non-empty
    string, the comparison on the next line dropped) is reported."""
    (tmp_path / "test_slip.py").write_text('def test_slip(body):\n    assert "a long "\n    "expected text" in body\n')
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "ruff.toml"),
                             "--output-format", "concise", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 1 and "B015" in result.stdout and "PLW0129" in result.stdout, result.stdout
