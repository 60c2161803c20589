"""`python app.py`'s start (demo/serve.py, demo/settings.py): whether a failed launch was a port in use, checked where
Gradio binds it, without starting the app; and what the app answers before torch and Gradio load (--help, a bad
setting, a port in use), at once (tests/test_app_api.py runs `python app.py` on a port in use too)."""
import errno
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from gradio.http_server import LOCALHOST_NAME

from demo import settings
from demo.serve import _port_in_use, check_address, environment_help, gradio_probe_address, parse_options, serve
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


def test_the_probe_address_is_gradios():
    """The port is probed where Gradio binds it first, read without importing Gradio (app.py probes it before
    Gradio loads): the same address as Gradio's own, for this process's GRADIO_SERVER_NAME."""
    assert gradio_probe_address() == LOCALHOST_NAME


def test_a_port_taken_between_the_check_and_the_launch_is_one_line_too():
    """app.py refuses a port in use as it starts; a process that takes the port while the models load makes
    Gradio's launch fail: `serve` says that in the same line, and leaves another failure as it is."""
    class Blocks:
        def launch(self, server_name, server_port, **_):
            raise OSError(f"Cannot find empty port in range: {server_port}-{server_port}")

    with _listening(socket.AF_INET, LOCALHOST_NAME) as listener:
        port = listener.getsockname()[1]
        with pytest.raises(SystemExit) as stopped:
            serve(Blocks(), parse_options(["--host", LOCALHOST_NAME, "--port", str(port)]))
    assert str(stopped.value) == (f"app.py: port {port} is in use by another process: choose another with --port "
                                  "or GRADIO_SERVER_PORT")
    with pytest.raises(OSError, match="Cannot find empty port"):  # a free port: Gradio's own error
        serve(Blocks(), parse_options(["--host", LOCALHOST_NAME, "--port", str(_free_port(LOCALHOST_NAME))]))


def _app_start(args, env) -> tuple[subprocess.CompletedProcess, set[str]]:
    """`python app.py ARGS` under `python -X importtime`: its end, and the modules it imported (a server it started
    would run into the timeout)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "app.py", *args], cwd=ROOT,
                          env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", **env}, capture_output=True,
                          text=True, timeout=60)
    lines = done.stderr.splitlines()
    imported = {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}
    done.stderr = "".join(f"{line}\n" for line in lines if not line.startswith("import time:"))
    return done, imported


HEAVY = {"torch", "gradio", "numpy", "transformers", "tokenizers", "huggingface_hub", "roberta"}


@pytest.mark.parametrize("variable, value, said", [
    ("APP_QUEUE_SIZE", "0", "APP_QUEUE_SIZE must be a whole number of at least 1, got '0'"),
    ("APP_CONCURRENCY", "two", "APP_CONCURRENCY must be a whole number of at least 1, got 'two'"),
    ("TORCH_THREADS", "abc", "TORCH_THREADS must be a whole number of at least 1, got 'abc'"),
    ("TORCH_THREADS", "-2", "TORCH_THREADS must be a whole number of at least 1, got '-2'"),
    ("APP_DEVICE", "gpu", "APP_DEVICE must be cpu, cuda, cuda:N or auto, got 'gpu'"),
    ("APP_HUB_MODELS", "some", "APP_HUB_MODELS must be one of any, suggested, off, got 'some'"),
    ("APP_LOCAL_MODELS", "maybe", "APP_LOCAL_MODELS must be 1 or 0 (true or false, yes or no, on or off), "
                                  "got 'maybe'"),
])
def test_a_bad_setting_stops_the_app_in_one_line_before_torch_and_gradio_load(variable, value, said):
    """A bad setting stopped the app after some 10 s of imports (a queue size, the device), after the models had
    loaded (TORCH_THREADS=abc, in a ValueError's traceback), or in a traceback as the page was built
    (APP_HUB_MODELS=some); APP_LOCAL_MODELS=maybe was read as no, unsaid. Each is one line naming the variable now,
    exit 1, before anything large is imported."""
    done, imported = _app_start([], {variable: value})
    assert done.returncode == 1 and done.stdout == "", done.stderr[-3000:]
    assert done.stderr.splitlines() == [f"app.py: {said}"]
    assert imported & HEAVY == set()


def test_every_setting_the_help_names_is_accepted_as_its_help_says(monkeypatch):
    """The values --help gives for each setting pass the start-up check (`settings.check`)."""
    for variable, values in {"APP_QUEUE_SIZE": ["1", "64"], "APP_CONCURRENCY": ["1", "2"],
                             "TORCH_THREADS": ["", "0", "3"], "APP_DEVICE": ["cpu", "cuda", "cuda:1", "auto"],
                             "APP_HUB_MODELS": ["any", "suggested", "off", "Off", ""],
                             "APP_LOCAL_MODELS": ["1", "true", "yes", "on", "0", "false", "no", "off", ""]}.items():
        for value in values:
            monkeypatch.setenv(variable, value)
            settings.check()
        monkeypatch.delenv(variable)
    monkeypatch.setenv("TORCH_THREADS", "3")
    assert settings.torch_threads() == 3
    monkeypatch.setenv("APP_LOCAL_MODELS", "Yes")
    assert settings.local_models_allowed() is True
    monkeypatch.setenv("APP_LOCAL_MODELS", "off")
    assert settings.local_models_allowed() is False


def test_help_and_a_port_in_use_answer_before_torch_and_gradio_load():
    """`python app.py --help` took some 12 s here (torch, Gradio and the app's modules imported first), and a
    second `python app.py` on a port in use said so only after the models had loaded and the page was built
    (about 25 s): both answer at once now, having imported nothing large."""
    done, imported = _app_start(["--help"], {})
    assert done.returncode == 0 and "--port" in done.stdout and "APP_DEVICE" in done.stdout, done.stderr[-3000:]
    assert imported & HEAVY == set()
    with _listening(socket.AF_INET, "127.0.0.1") as listener:
        port = listener.getsockname()[1]
        done, imported = _app_start(["--host", "127.0.0.1", "--port", str(port)], {"GRADIO_SERVER_NAME": "127.0.0.1"})
    assert done.returncode == 1 and done.stderr.splitlines() == [
        f"app.py: port {port} is in use by another process: choose another with --port or GRADIO_SERVER_PORT"]
    assert imported & HEAVY == set()


@pytest.mark.parametrize("host, problem", [("nosuchhost.invalid", "does not resolve to an address"),
                                           ("192.0.2.1", "is not an address of this machine")])
def test_a_host_the_app_cannot_listen_on_is_one_line_at_once(host, problem):
    """A --host that does not resolve (a typo), or an address of another machine (192.0.2.1: TEST-NET-1, no
    machine's): Gradio's traceback after the models had loaded, about the port ("Cannot find empty port in range"),
    which was free. Now one line naming --host and GRADIO_SERVER_NAME, at once; this machine's addresses pass."""
    done, imported = _app_start(["--host", host, "--port", str(_free_port("127.0.0.1"))], {})
    assert done.returncode == 1 and done.stderr.splitlines() == [
        f"app.py: --host {host!r} (or GRADIO_SERVER_NAME) {problem}: use 127.0.0.1 for this machine alone, or "
        "0.0.0.0 for every network it is on"]
    assert imported & HEAVY == set()
    for here in ("127.0.0.1", "0.0.0.0", "localhost"):
        options = parse_options(["--host", here, "--port", str(_free_port("127.0.0.1"))])
        assert check_address(options) is options


def test_a_port_this_user_may_not_open_is_one_line(monkeypatch):
    """A port below 1024 without root: Gradio's traceback about a port in use, after the models had loaded. The bind
    refused with EACCES (as it is for a user who is not root; these tests may run as root) is one line now."""
    from demo import serve as serving

    monkeypatch.setattr(serving, "_bind_error", lambda family, address: errno.EACCES)
    with pytest.raises(SystemExit) as stopped:
        check_address(parse_options(["--host", "127.0.0.1", "--port", "80"]))
    assert str(stopped.value) == ("app.py: port 80 needs privileges this user lacks (a port below 1024, as a rule): "
                                  "choose another with --port or GRADIO_SERVER_PORT")


def _app_loading(sigint) -> subprocess.Popen:
    """`python app.py` started with SIGINT set to `sigint` (set either way: a test run started in the background,
    nohup or `&`, passes on an ignored SIGINT), once it has said that it is loading the models."""
    app = subprocess.Popen([sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(_free_port("127.0.0.1"))],
                           cwd=ROOT, env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"},
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))
    assert app.stdout.readline().startswith("app.py: loading the models")  # said once the handler is in place
    return app


def test_ctrl_c_while_the_models_load_is_one_line():
    """Ctrl-C in the 15 s before the page is served ended in a KeyboardInterrupt's traceback through whatever was
    being imported; it is one line now, exit code 130. (Once the page is served, Gradio's own handling closes the
    server, as before.) Started with SIGINT ignored, as a shell starts `python app.py &`, it goes on ignoring it."""
    for sigint in (signal.SIG_DFL, signal.SIG_IGN):
        app = _app_loading(sigint)
        try:
            app.send_signal(signal.SIGINT)
            if sigint == signal.SIG_IGN:
                time.sleep(2)
                assert app.poll() is None
                continue
            printed, said = app.communicate(timeout=60)
        finally:
            if app.poll() is None:
                app.kill()
                app.communicate()
        assert app.returncode == 130 and printed == "", printed
        assert said.splitlines() == ["app.py: stopped (Ctrl-C) before it served the page"], said[-3000:]


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
