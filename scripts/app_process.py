"""`python app.py` in a subprocess on a free local port, for the API and browser tests (tests/) and the load
check (`python -m scripts.load_check`): `with AppProcess(env) as app: app.url`."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_app_url(url: str) -> str | None:
    """Why no app answers at `url` (a `--url` option), or None when one does: checked before any work."""
    try:
        urllib.request.urlopen(url.rstrip("/") + "/gradio_api/info", timeout=10).close()
    except (OSError, ValueError) as err:
        return f"--url {url}: no app answers there ({err})"
    return None


class AppProcess:
    """`python app.py` on a free local port; `with AppProcess(env) as app: app.url`."""

    def __init__(self, env: dict | None = None, port: int | None = None, timeout: float = 120.0):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "GRADIO_SERVER_NAME": "127.0.0.1",
                    "GRADIO_SERVER_PORT": str(self.port), "PYTHONUNBUFFERED": "1", **(env or {})}
        self.timeout = timeout
        self.proc = None
        self.log = None
        self.started_at = None
        self.ready_seconds = None

    def start(self) -> "AppProcess":
        self.log = tempfile.NamedTemporaryFile("w+", prefix="app-", suffix=".log", delete=False)
        self.started_at = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=self.env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        try:
            return self._wait_until_ready()
        except BaseException:  # Ctrl-C or SIGTERM while it starts too: never a server left without its parent
            self.stop()
            raise

    def _wait_until_ready(self) -> "AppProcess":
        deadline = self.started_at + self.timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                output = self.output()
                raise RuntimeError(f"app.py exited with code {self.proc.returncode}:\n{output[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "gradio_api/info", timeout=2) as response:
                    if response.status == 200:
                        self.ready_seconds = time.perf_counter() - self.started_at
                        return self
            except OSError:
                pass
            time.sleep(0.25)
        output = self.output()
        raise TimeoutError(f"app.py did not answer within {self.timeout:.0f} s:\n{output[-3000:]}")

    def output(self) -> str:
        if self.log is None:
            return ""
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log is not None:
            self.log.close()
            Path(self.log.name).unlink(missing_ok=True)
            self.log = None

    def __enter__(self) -> "AppProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
