"""The test session's own temporary folder (tests/conftest.py): a session stopped by a signal leaves it, the next
session removes it, and never a running session's; the apps the tests start cache Gradio's files in it, not in a
shared $TMPDIR/gradio. Sessions of pytest run here in new processes, on a temporary folder (TMPDIR) of the test's own.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT

fcntl = pytest.importorskip("fcntl")  # the sweep needs flock (conftest.py: none on Windows)
pytestmark = pytest.mark.slow  # sessions of pytest in new processes: about 30 s


def session(tmpdir: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def left_in(tmpdir: Path) -> list[str]:
    """What is in `tmpdir`, pytest's own folders (pytest-of-USER, which it rotates) aside."""
    return sorted(p.name for p in tmpdir.iterdir() if not p.name.startswith("pytest-of-"))


def wait_for(check, seconds=90):
    end = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < end, "timed out"
        time.sleep(0.2)
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_sessions_folder_is_removed_by_the_next_session_and_a_running_ones_kept(tmp_path, sig):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    running = tmpdir / "tests-session-running"  # as a running session holds it: the lock held (here by this test)
    running.mkdir()
    fd = os.open(running / ".lock", os.O_CREAT | os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    starting = tmpdir / "tests-session-starting"  # as a session is the instant before it renames its .lock.new
    starting.mkdir()
    (starting / ".lock.new").touch()
    try:
        stopped = session(tmpdir, "tests/test_formatting.py")

        def started():
            assert stopped.poll() is None, "the session ended before its folder was found"
            return [p.parent for p in tmpdir.glob("tests-session-*/.lock") if p.parent != running]
        folder = wait_for(started)[0]
        stopped.send_signal(sig)
        stopped.communicate(timeout=60)
        assert folder.is_dir()  # no atexit ran: left, as before

        later = session(tmpdir, "--collect-only", "tests/test_formatting.py")
        out, _ = later.communicate(timeout=120)
        assert later.returncode == 0, out
        assert left_in(tmpdir) == ["tests-session-running", "tests-session-starting"]
    finally:
        os.close(fd)


def test_the_apps_the_tests_start_cache_gradios_files_in_the_sessions_folder(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    run = session(tmpdir, "-m", "slow", "tests/test_app_api.py", "-k", "test_embeddings or test_tokens_and_merges")
    out, _ = run.communicate(timeout=300)
    assert run.returncode == 0, out
    assert left_in(tmpdir) == []  # no gradio/, no tests-session-*
