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
    """A port no one listens on now; the app binds it seconds later, so another process may have taken it by then
    (`AppProcess` checks that the server answering there is its own)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_taken(port: int) -> bool:
    """Whether a process listens on `port` of 127.0.0.1 (a bind that a listening socket refuses; SO_REUSEADDR, as
    the app's server binds, so that connections of a server gone are no obstacle)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def listens_on(pid: int, port: int) -> bool | None:
    """Whether process `pid` holds a socket listening on TCP `port`, from Linux's /proc: its open files against the
    listening sockets of the port in the machine's tables. None where there is no /proc (not Linux): unknown."""
    if not Path("/proc/self/net/tcp").exists():
        return None
    listening = set()
    for table in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:  # the process has ended, or no IPv6
            continue
        for row in rows:  # sl local_address rem_address st ... inode: "0: 0100007F:1F90 00000000:0000 0A ..."
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                listening.add(f"socket:[{fields[9]}]")
    try:
        descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # the process has ended
        return False
    for descriptor in descriptors:
        try:
            if os.readlink(descriptor) in listening:
                return True
        except OSError:  # closed while we looked
            pass
    return False


def check_app_url(url: str) -> str | None:
    """Why no app answers at `url` (a `--url` option), or None when one does: checked before any work."""
    try:
        urllib.request.urlopen(url.rstrip("/") + "/gradio_api/info", timeout=10).close()
    except (OSError, ValueError) as err:
        return f"--url {url}: no app answers there ({err})"
    return None


class PortTaken(RuntimeError):
    """app.py exited while another process listened on the port it was given."""


class AppProcess:
    """`python app.py` on a free local port; `with AppProcess(env) as app: app.url`. Ready once the process it
    started answers there: another server that took the port after `free_port` is never taken for it, and the app
    that died of it is started again, once, on a new port (a `port` given is not changed: it fails)."""

    script = ROOT / "app.py"  # the program started (tests/test_app_process.py starts a stand-in)

    def __init__(self, env: dict | None = None, port: int | None = None, timeout: float = 120.0):
        """`env`: variables set for the app over this process's own (None unsets one)."""
        self.port_given = port is not None
        given = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "GRADIO_SERVER_NAME": "127.0.0.1",
                 "PYTHONUNBUFFERED": "1", **(env or {})}
        self.env = {name: value for name, value in given.items() if value is not None}
        self._use_port(port or free_port())
        self.timeout = timeout
        self.proc = None
        self.log = None
        self.started_at = None
        self.ready_seconds = None

    def _use_port(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}/"
        self.env["GRADIO_SERVER_PORT"] = str(port)

    def start(self) -> "AppProcess":
        try:
            try:
                return self._launch()
            except PortTaken:
                if self.port_given:
                    raise
                self.stop()  # its log too: it says only that the port was in use
                self._use_port(free_port())
                return self._launch()
        except BaseException:  # Ctrl-C or SIGTERM while it starts too: never a server left without its parent
            self.stop()
            raise

    def _launch(self) -> "AppProcess":
        self.log = tempfile.NamedTemporaryFile("w+", prefix="app-", suffix=".log", delete=False)
        self.started_at = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, str(self.script)], cwd=ROOT, env=self.env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        return self._wait_until_ready()

    def _wait_until_ready(self) -> "AppProcess":
        deadline = self.started_at + self.timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                error = PortTaken if port_taken(self.port) else RuntimeError
                raise error(f"app.py exited with code {self.proc.returncode}:\n{self.output()[-3000:]}")
            if self._answers() and listens_on(self.proc.pid, self.port) is not False:  # None: unknown, not Linux
                self.ready_seconds = time.perf_counter() - self.started_at
                return self
            time.sleep(0.25)
        output = self.output()
        raise TimeoutError(f"app.py did not answer within {self.timeout:.0f} s:\n{output[-3000:]}")

    def _answers(self) -> bool:
        """Whether a server (ours, or one that took the port) answers HTTP at the app's address."""
        try:
            with urllib.request.urlopen(self.url + "gradio_api/info", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

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
