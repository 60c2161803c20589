"""How a script ends: the exit codes of every script in `train/` and `scripts/` (`train.runtime` says what each
means), a user error's one line, and Ctrl-C as one of them. No torch here: a script that needs none
(`train.gpu_transfer`, `scripts.load_check`) imports this without loading it."""
import os
import signal
import sys
import threading

EXIT_OK, EXIT_FAILED, EXIT_USER_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


class UserError(Exception):
    """A problem with the command line or the input files: reported as `error: ...`, without a traceback."""


USER_ERRORS = (UserError, OSError, ValueError)  # ValueError includes train.data.DataError


def report_user_error(err: BaseException) -> int:
    """Print `error: ...` (the traceback too with TRAIN_DEBUG=1) and give EXIT_USER_ERROR."""
    if os.environ.get("TRAIN_DEBUG"):
        raise err
    print(f"error: {err}", file=sys.stderr)
    return EXIT_USER_ERROR


def stop_on_sigterm() -> None:
    """Take SIGTERM (what `timeout` and CI send) as Ctrl-C, so that `finally` blocks run: a script that started
    the app stops it, instead of leaving it running without a parent. Main thread only (Python's rule)."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)


def exit_code(main, argv=None) -> int:
    """A script's `main(argv)` -> its exit code, Ctrl-C included: "interrupted" and EXIT_INTERRUPTED, not a
    traceback (the scripts that train save a checkpoint first: `train.runtime.run_main`)."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
