"""How `python app.py` starts: its options (--host, --port), a --help that lists every environment variable the app
reads, and a host it cannot listen on or a port in use said in one line. (A GRADIO_SERVER_PORT that is no number is
said in one line by demo/__init__.py: Gradio reads it as it is imported, before this module's code runs.)

app.py checks its settings (demo/settings.py), reads the options (`parse_options`) and checks the host and port
(`check_address`) first, at once: this module and demo/settings.py import the standard library only, and torch,
Gradio and the models load after. Then it builds the page and serves it (`serve`).
"""
from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
import sys

from demo import settings


def environment_help() -> str:
    """The environment variables the app reads, for --help (tests/test_app_api.py checks every one is named)."""
    models, folders = settings.MODEL_ENV, settings.SHIPPED_FOLDER
    return f"""environment variables:
  {models["mlm"]}, {models["sentiment"]}
      a folder or Hub repo id to serve in place of the shipped model
      (assets/{folders["mlm"]}, assets/{folders["sentiment"]})
  {settings.TOKEN_COUNTS_ENV}
      another token counts file (python -m train.token_counts), for a model pretrained on other text
  {settings.HUB_ENV}
      the Hub models a visitor may choose in a model box: {", ".join(settings.HUB_MODES)}
      (default: any; suggested on a Hugging Face Space)
  {settings.LOCAL_ENV}
      1: a visitor may also choose a folder on this machine
  APP_CONCURRENCY
      requests computed at once (default 2), in each of the compute and slow queues;
      the queue that loads models runs {settings.LOADS_AT_ONCE} at once
  APP_QUEUE_SIZE
      requests that may wait in each queue (default 64; at least 1)
  TORCH_THREADS
      torch threads per request (default, or 0: the CPUs shared among APP_CONCURRENCY, 1 to 4)
  APP_DEVICE
      where the models compute: cpu (default), cuda, cuda:N, or auto (CUDA where this machine has it)
  HF_HUB_OFFLINE
      1: nothing is downloaded; only Hub models already in the download cache load
  GRADIO_SERVER_NAME, GRADIO_SERVER_PORT
      the defaults of --host and --port
  SPACE_ID
      set by Hugging Face Spaces: the app listens on 0.0.0.0, and {settings.HUB_ENV} defaults to suggested"""


def parse_options(argv=None) -> argparse.Namespace:
    """`python app.py`'s options (--host, --port: Gradio's GRADIO_SERVER_NAME and GRADIO_SERVER_PORT by default),
    read before the models load, so that --help and a bad option answer at once."""
    parser = argparse.ArgumentParser(prog="python app.py", description="Serve the RoBERTa from scratch demo.",
                                     epilog=environment_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME") or (
        "0.0.0.0" if os.environ.get("SPACE_ID") else "127.0.0.1"),
        help="the address to listen on (default: GRADIO_SERVER_NAME, else 127.0.0.1, or 0.0.0.0 on a Hugging Face "
             "Space; now %(default)s)")
    parser.add_argument("--port", type=int, default=os.environ.get("GRADIO_SERVER_PORT", "7860"),
                        help="the port to listen on (default: GRADIO_SERVER_PORT, else 7860; now %(default)s)")
    options = parser.parse_args(argv)
    if not 0 < options.port < 65536:
        parser.error(f"--port {options.port} (or GRADIO_SERVER_PORT) is not a port number: 1 to 65535")
    return options


def gradio_probe_address() -> str:
    """Where Gradio's launch first binds the port, whatever the host: GRADIO_SERVER_NAME, else 127.0.0.1, as
    `gradio.http_server.LOCALHOST_NAME` reads it (read here without importing Gradio; tests/test_serve.py checks
    the two agree)."""
    return os.getenv("GRADIO_SERVER_NAME", "127.0.0.1")


def _served_addresses(host: str, port: int) -> list[tuple[int, tuple]]:
    """Each (family, address) of `host` that uvicorn serves, IPv4 or IPv6 ("[::1]" as Gradio reads it);
    socket.gaierror for a host that does not resolve."""
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return [(family, address) for family, _, _, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def _port_in_use(host: str, port: int) -> bool:
    """Whether another process holds `port` where Gradio's launch binds it: on Gradio's own probe address (IPv4,
    `gradio_probe_address`, whatever the host), then on each of `host`'s addresses (`_served_addresses`; a host
    that does not resolve, on Gradio's address only)."""
    try:
        served = _served_addresses(host, port)
    except socket.gaierror:
        served = []
    return any(_bind_error(family, address) == errno.EADDRINUSE for family, address in
               [(socket.AF_INET, (gradio_probe_address(), port)), *served])


def _bind_error(family: int, address: tuple) -> int | None:
    """The errno with which binding `address` fails (EADDRINUSE: another socket holds it), None if it binds."""
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Gradio binds: no old connection counts
        try:
            probe.bind(address)
        except OSError as err:
            return err.errno
    return None


def _host_problem(host: str, port: int) -> str | None:
    """Why this machine cannot listen on `host`: a name that does not resolve, or no address of it that is this
    machine's (an address of another machine, IPv6 where this one has none); None if it can."""
    try:
        served = _served_addresses(host, port)
    except socket.gaierror:
        return "does not resolve to an address"
    if all(_bind_error(family, address) in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT) for family, address in served):
        return "is not an address of this machine"
    return None


def _port_in_use_message(port: int) -> str:
    return f"app.py: port {port} is in use by another process: choose another with --port or GRADIO_SERVER_PORT"


def check_address(options: argparse.Namespace) -> argparse.Namespace:
    """`options`, if the app can listen on their host and port. A host this machine cannot listen on (a typo, an
    address of another machine), a port another process listens on (a second `python app.py`, say) and a port this
    user may not open (below 1024 without root) end the program at once, in one line naming the option and its
    variable (exit 1): they were said after the models had loaded and the page was built, some 20 s on a 2-core
    CPU, the host and the privileged port in Gradio's traceback about a port in use.
    (`serve` says a port in use too, for a process that takes it meanwhile.)"""
    problem = _host_problem(options.host, options.port)
    if problem:
        sys.exit(f"app.py: --host {options.host!r} (or GRADIO_SERVER_NAME) {problem}: use 127.0.0.1 for this "
                 "machine alone, or 0.0.0.0 for every network it is on")
    if _port_in_use(options.host, options.port):
        sys.exit(_port_in_use_message(options.port))
    if _bind_error(socket.AF_INET, (gradio_probe_address(), options.port)) == errno.EACCES:
        sys.exit(f"app.py: port {options.port} needs privileges this user lacks (a port below 1024, as a rule): "
                 "choose another with --port or GRADIO_SERVER_PORT")
    return options


def _stopped_while_loading(signum, frame):
    print("app.py: stopped (Ctrl-C) before it served the page", file=sys.stderr, flush=True)
    raise SystemExit(130)


def stop_quietly_while_loading() -> None:
    """Ctrl-C while the models load and the page is laid out (15 s on a quiet 2-core CPU) ended in a
    KeyboardInterrupt's traceback through whatever was being imported or computed: one line now, exit code 130.
    `serve` hands Ctrl-C back to Python's own handler, with which Gradio closes the server. A process that ignores
    SIGINT (started in the background by a shell) goes on ignoring it."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _stopped_while_loading)


def serve(blocks, options: argparse.Namespace, **launch_kwargs) -> None:
    """`blocks.launch` on the options' host and port; a port another process listens on ends the program in one
    line naming --port and GRADIO_SERVER_PORT (exit 1), rather than Gradio's traceback."""
    if signal.getsignal(signal.SIGINT) is _stopped_while_loading:  # Ctrl-C: Gradio's again
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        blocks.launch(server_name=options.host, server_port=options.port, **launch_kwargs)
    except OSError:
        if not _port_in_use(options.host, options.port):
            raise
        sys.exit(_port_in_use_message(options.port))
