"""`scripts.app_process.AppProcess`, the app in a subprocess for the API, browser and load checks: the server it
talks to is the process it started. A stand-in app.py (a few lines of http.server that bind the port they are
given, as app.py does once torch and gradio are imported) keeps these tests to a second each."""
import http.server
import os
import threading
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from scripts import app_process
from scripts.app_process import AppProcess, PortTaken

pytestmark = pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(),
                                reason="which process listens on a port is read from Linux's /proc")

STAND_IN_APP = """
import http.server, os, sys, time
with open(os.environ["STARTS_FILE"], "a") as starts:
    starts.write(f"started, HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE')}\\n")
if os.environ.get("CRASH"):
    sys.exit("app.py crashed before it bound its port")
time.sleep(0.5)  # app.py imports torch and gradio before it binds: the moment another process may take the port


class Info(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(str(os.getpid()).encode())  # who answered

    def log_message(self, *args):
        pass


try:
    server = http.server.HTTPServer(("127.0.0.1", int(os.environ["GRADIO_SERVER_PORT"])), Info)
except OSError as err:
    sys.exit(f"port in use: {err}")
server.serve_forever()
"""


class SomeoneElse(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"someone else's server")

    def log_message(self, *args):
        pass


@contextmanager
def another_server():
    """A server of another process's, on a free port that it holds: the port `free_port` chose, taken since."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SomeoneElse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def stand_in(tmp_path, env=None, port=None) -> AppProcess:
    script = tmp_path / "app.py"
    script.write_text(STAND_IN_APP)
    app = AppProcess({"STARTS_FILE": str(tmp_path / "starts"), **(env or {})}, port=port, timeout=30)
    app.script = script
    return app


def starts(tmp_path) -> list[str]:
    """One line per start of the stand-in app: "started, HF_HUB_OFFLINE=<its value>"."""
    return (tmp_path / "starts").read_text().splitlines()


def answer(url: str) -> str:
    with urllib.request.urlopen(url + "gradio_api/info", timeout=10) as response:
        return response.read().decode()


def test_a_server_that_took_the_port_is_not_taken_for_the_app(tmp_path, monkeypatch):
    """free_port's port, taken by another process before app.py bound it: the harness took that server's answer
    for the app's and ran the tests against it, while app.py died of "port in use" unnoticed."""
    with another_server() as taken:
        chosen = iter([taken])
        real_free_port = app_process.free_port
        monkeypatch.setattr(app_process, "free_port", lambda: next(chosen, None) or real_free_port())
        with stand_in(tmp_path) as app:
            assert app.port != taken and app.alive()
            assert answer(app.url) == str(app.proc.pid)  # the server it talks to is the process it started
        assert answer(f"http://127.0.0.1:{taken}/") == "someone else's server"  # left alone
    assert len(starts(tmp_path)) == 2  # the app that died of the taken port, then one on a new port


def test_a_port_given_that_is_taken_fails_with_the_apps_reason(tmp_path):
    with another_server() as taken:
        app = stand_in(tmp_path, port=taken)
        with pytest.raises(PortTaken, match="port in use"):
            app.start()
        assert app.port == taken and not app.alive() and len(starts(tmp_path)) == 1


def test_an_app_that_fails_for_another_reason_is_not_started_again(tmp_path):
    app = stand_in(tmp_path, env={"CRASH": "1"})
    with pytest.raises(RuntimeError, match="crashed before it bound its port") as info:
        app.start()
    assert not isinstance(info.value, PortTaken) and len(starts(tmp_path)) == 1 and not app.alive()


def test_a_variable_given_as_none_is_unset_in_the_app(tmp_path, monkeypatch):
    """How scripts.screenshots starts the app online on a machine that set HF_HUB_OFFLINE."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with stand_in(tmp_path):
        pass
    with stand_in(tmp_path, env={"HF_HUB_OFFLINE": None}):
        pass
    assert starts(tmp_path) == ["started, HF_HUB_OFFLINE=1", "started, HF_HUB_OFFLINE=None"]


def test_the_listening_process_is_told_apart(tmp_path):
    with another_server() as taken:
        assert app_process.listens_on(os.getpid(), taken) is True
        assert app_process.port_taken(taken)
        with stand_in(tmp_path) as app:
            assert app_process.listens_on(app.proc.pid, taken) is False
            assert app_process.listens_on(app.proc.pid, app.port) is True
    assert not app_process.port_taken(taken)
