"""The app's settings: the environment variables it reads, what each may say, and the checks made as it starts.

The standard library only: app.py checks every setting (`check`) and reads its options (demo/serve.py) before it
imports torch and Gradio and loads the models, which took 15 s on a quiet 2-core CPU; so `python app.py --help`, a bad
option and a bad setting answer at once. Each bad setting stops the app in one line naming the variable (exit 1);
the modules that use a setting read it through this module (demo/wiring.py the queues, demo/models.py the device and
threads, demo/model_choice.py the model boxes, demo/training_counts.py the counts file), so a test or a benchmark
that imports them alone refuses it alike.
"""
from __future__ import annotations

import os
import re
import sys

MODEL_ENV = {"mlm": "MLM_MODEL", "sentiment": "SENTIMENT_MODEL"}  # a folder or Hub repo id to serve instead
SHIPPED_FOLDER = {"mlm": "mini-roberta-mlm", "sentiment": "mini-roberta-sst2"}  # the shipped models, under assets/
TOKEN_COUNTS_ENV = "TOKEN_COUNTS"  # another counts file, for models trained on other text (or with another tokenizer)
LOCAL_ENV = "APP_LOCAL_MODELS"  # whether a visitor may choose a folder on this machine in a model box
HUB_ENV = "APP_HUB_MODELS"  # the Hub models a visitor may choose in a model box
HUB_MODES = ("any", "suggested", "off")
YES, NO = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")  # what APP_LOCAL_MODELS may say
# An API call that names a model not loaded yet (demo.model_choice's `loading_aside`): the model loads in the
# background, at most LOADS_AT_ONCE at a time (the page's model boxes load in a queue of as many, demo.wiring's LOAD)
LOADS_AT_ONCE = 2
APP_DEVICE_RE = re.compile(r"cpu|cuda(?::\d+)?|auto")  # what APP_DEVICE may say (demo.models.app_device)


def at_least_one(name: str, value: str) -> int:
    """The whole number `value` of the environment variable `name`, at least 1; else the app stops, in one line
    naming it: a queue that computes 0 requests at once answers none, and one where 0 may wait refuses every
    request, however idle the app."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise SystemExit(f"app.py: {name} must be a whole number of at least 1, got {value!r}")
    return number


def concurrency() -> int:
    """APP_CONCURRENCY: requests computed at once in each of the compute and slow queues (default 2)."""
    return at_least_one("APP_CONCURRENCY", os.environ.get("APP_CONCURRENCY", "2"))


def queue_size() -> int:
    """APP_QUEUE_SIZE: requests that may wait in each queue (default 64)."""
    return at_least_one("APP_QUEUE_SIZE", os.environ.get("APP_QUEUE_SIZE", "64"))


def torch_threads() -> int:
    """TORCH_THREADS: torch threads per request; 0 (unset, empty or 0): the app shares the CPUs itself
    (demo.models.configure_torch). Anything but a whole number stopped the app in a ValueError's traceback."""
    value = os.environ.get("TORCH_THREADS", "").strip()
    return at_least_one("TORCH_THREADS", value) if value not in ("", "0") else 0


def device_named(value: str) -> str:
    """`value` if APP_DEVICE may say it (cpu, cuda, cuda:N or auto); else the app stops in one line naming the
    variable. Whether this machine has that device is demo.models.app_device's to say (it needs torch)."""
    if not APP_DEVICE_RE.fullmatch(value):
        raise SystemExit(f"app.py: APP_DEVICE must be cpu, cuda, cuda:N or auto, got {value!r}")
    return value


def device() -> str:
    """APP_DEVICE: where the models compute (default cpu), as written (`device_named`)."""
    return device_named(os.environ.get("APP_DEVICE", "cpu"))


def local_models_allowed() -> bool:
    """APP_LOCAL_MODELS: 1 (true, yes, on) lets a visitor choose a folder on this machine; unset (0, false, no,
    off) does not. Anything else is refused (it was read as "no", unsaid)."""
    value = os.environ.get(LOCAL_ENV, "").strip().lower()
    if value not in YES + NO:
        raise ValueError(f"{LOCAL_ENV} must be 1 or 0 (true or false, yes or no, on or off), got {value!r}")
    return value in YES


def hub_models_mode() -> str:
    """`APP_HUB_MODELS`: any (the default; suggested on a Hugging Face Space, where the visitors are the public),
    suggested or off; an unknown value is refused at start-up."""
    mode = os.environ.get(HUB_ENV, "").strip().lower() or ("suggested" if os.environ.get("SPACE_ID") else "any")
    if mode not in HUB_MODES:
        raise ValueError(f"{HUB_ENV} must be one of {', '.join(HUB_MODES)}, got {mode!r}")
    return mode


def refuse_a_port_variable_that_is_no_number() -> None:
    """Gradio reads GRADIO_SERVER_PORT as it is imported (`int(...)`): a value that is no number ended
    `python app.py`, --help included, in that ValueError's traceback. demo/__init__.py calls this before any module
    of the package imports Gradio, and it says so in one line and exit 2, as `--port 0` is (demo/serve.py's
    parse_options checks the range). Any program that imports the package is named (a script's file name;
    app.py's as its --help is)."""
    try:
        int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    except ValueError:
        program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        print(f"{'python app.py' if program == 'app.py' else program}: error: "
              f"GRADIO_SERVER_PORT={os.environ['GRADIO_SERVER_PORT']!r} is not a port number: 1 to 65535",
              file=sys.stderr)
        raise SystemExit(2) from None


def check() -> None:
    """Every setting read now, so that a bad one stops the app as it starts, in one line naming it (exit 1), not
    after the models have loaded or at a visitor's first request."""
    for read in (concurrency, queue_size, torch_threads, device):
        read()
    try:
        local_models_allowed()
        hub_models_mode()
    except ValueError as err:
        raise SystemExit(f"app.py: {err}") from None
