"""`python app.py`'s start (demo/serve.py): whether a failed launch was a port in use, checked where Gradio binds
it, without starting the app (tests/test_app_api.py runs `python app.py` on a port in use)."""
import os
import socket
import subprocess
import sys

import pytest
from gradio.http_server import LOCALHOST_NAME

from demo.serve import _port_in_use, environment_help, parse_options
from helpers import ROOT


def _listening(family: int, host: str) -> socket.socket:
    """A socket of `family` listening on a free port of `host`; the test skipped where `host` cannot be bound."""
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.bind((host, 0))
    except OSError as err:
        listener.close()
        pytest.skip(f"cannot bind {host} here: {err}")
    listener.listen()
    return listener


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def test_a_port_in_use_on_an_ipv6_host_is_found():
    """An IPv6 host was probed with an IPv4 socket, whose bind fails for another reason than a port in use: a port
    another process held on ::1 went unnoticed, and Gradio's traceback showed instead of the one-line message."""
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    with _listening(socket.AF_INET6, "::1") as listener:
        port = listener.getsockname()[1]
        assert _port_in_use("::1", port)
        assert _port_in_use("[::1]", port)  # as a browser's address writes it, and Gradio strips it


def test_a_port_in_use_where_gradio_probes_it_is_found_whatever_the_host():
    """Gradio binds the port on its own probe address (127.0.0.1 unless GRADIO_SERVER_NAME says otherwise) before
    serving on the host, and refuses the port when that bind fails: for another host, the port held there is in
    use too."""
    other = "127.0.0.2" if LOCALHOST_NAME != "127.0.0.2" else "127.0.0.3"
    with _listening(socket.AF_INET, LOCALHOST_NAME) as listener:
        port = listener.getsockname()[1]
        try:
            with socket.socket() as elsewhere:
                elsewhere.bind((other, port))  # the host's own address is free
        except OSError as err:
            pytest.skip(f"cannot bind {other} here: {err}")
        assert _port_in_use(other, port)


def test_a_free_port_is_not_in_use():
    """A failure on a free port is Gradio's own error, left as it is."""
    port = _free_port(LOCALHOST_NAME)
    assert not _port_in_use(LOCALHOST_NAME, port)
    if socket.has_ipv6:
        assert not _port_in_use("::1", port)


def test_help_names_the_device_variable_and_what_it_takes():
    """The app computed on the CPU on any machine, and --help said nothing of it: it lists APP_DEVICE, with each
    form the variable takes (`demo.models.app_device`) and the default."""
    entry = environment_help().split("\n  APP_DEVICE\n")[1].split("\n  ")[0]
    assert all(form in entry for form in ("cpu (default)", "cuda", "cuda:N", "auto")), entry


@pytest.mark.parametrize("argv, variable", [(["--port", "0"], None), (["--port", "70000"], None), ([], "65536")])
def test_a_port_out_of_range_is_refused_in_one_line(argv, variable, capsys, monkeypatch):
    """--port 0, 70000, or a GRADIO_SERVER_PORT out of range (--port's default): argparse's usage and one error
    line naming both, exit 2, before the models load."""
    if variable is None:
        monkeypatch.delenv("GRADIO_SERVER_PORT", raising=False)
    else:
        monkeypatch.setenv("GRADIO_SERVER_PORT", variable)
    with pytest.raises(SystemExit) as exited:
        parse_options(argv)
    assert exited.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    port = argv[1] if argv else variable
    assert error == f"python app.py: error: --port {port} (or GRADIO_SERVER_PORT) is not a port number: 1 to 65535"


@pytest.mark.parametrize("variable", ["abc", "", "80.5"])
def test_a_port_variable_that_is_no_number_is_refused_in_one_line_before_gradio_reads_it(variable):
    """Gradio reads GRADIO_SERVER_PORT as it is imported (`int(...)`): `GRADIO_SERVER_PORT=abc python app.py --help`
    ended in its ValueError's traceback. The demo package refuses it first, in one line (exit 2, as --port 0), at
    once: nothing large is imported before it."""
    env = {**os.environ, "GRADIO_SERVER_PORT": variable}
    done = subprocess.run([sys.executable, "app.py", "--help"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"python app.py: error: GRADIO_SERVER_PORT={variable!r} is not a port number: 1 to 65535"], done.stderr
