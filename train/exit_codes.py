"""How a script ends: the exit codes of every script in `train/` and `scripts/` (`train.runtime` says what each
means), a user error's one line naming its option (`naming`), and Ctrl-C and SIGTERM as one of them
(`sigterm_as_interrupt`). No torch here: a script that needs none (`train.gpu_transfer`, `scripts.load_check`) imports
this without loading it."""
import contextlib
import os
import signal
import sys
import threading
import warnings

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


def with_option(err: BaseException, option: str) -> BaseException:
    """`err` (an OSError or ValueError whose message starts with a path: a missing, unreadable or malformed file
    or model folder) with the option it was given to in front: "--train data/x.tsv: no examples (only a header?)",
    of the same type when that type takes one message (else a UserError). A message that names an option already
    (it starts with one, or holds `option` as a word) is kept as it is."""
    message = str(err)
    if message.startswith("--") or f"{option} " in message or message.endswith(option):
        return err
    try:
        return type(err)(f"{option} {message}")
    except TypeError:  # a type with other arguments (UnicodeDecodeError)
        return UserError(f"{option} {message}")


@contextlib.contextmanager
def naming(option: str):
    """Inside: an OSError or ValueError (a missing file, a DataError, a model that cannot be loaded) is raised
    again with `option` in front of its message (`with_option`), so that the user's one `error:` line says which
    option gave the file:

        with naming("--train"):
            texts, labels, _ = read_labeled(args.train)
    """
    try:
        yield
    except (OSError, ValueError) as err:
        raise with_option(err, option) from None


def with_how_to_go_on(err: OSError, folder, how, always: bool = False) -> OSError:
    """`err` as the one `error:` line of a write that failed: a full disk's (errno ENOSPC or EDQUOT) from a writer
    other than `roberta.files` (a copy) as a `roberta.files.WriteError` naming the file it names, else `folder`; a
    WriteError ending with "free some space, then " and `how()` (how to go on), or with `how()` alone for another
    cause when `always`. Any other error as it is."""
    from roberta.files import DISK_FULL, WriteError  # (not at the top: importing roberta loads torch)

    full = err.errno in DISK_FULL
    if full and not isinstance(err, WriteError):
        wrapped = WriteError(err.filename2 or err.filename or folder, err)  # a copy names its destination second
        wrapped.__cause__, err = err, wrapped  # (its traceback, with TRAIN_DEBUG=1)
    if isinstance(err, WriteError) and not err.hint and (full or always):
        err.hint = f"{'free some space, then ' if full else ''}{how()}"
    return err


def ended_interrupted(returncode: int) -> bool:
    """Whether a child script's exit status (`subprocess`'s returncode) says it was interrupted: EXIT_INTERRUPTED,
    which a script started with -m returns whenever the signal comes (`stop_cleanly_outside_main`), or killed by
    SIGINT or SIGTERM where no handler took them (-2, -15; 143 through a shell): a signal in the moment before
    Python imported `train`, or a script not started with -m."""
    return returncode in (EXIT_INTERRUPTED, -signal.SIGINT, -signal.SIGTERM, 128 + signal.SIGTERM)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _stopped_outside_main(signum, frame):
    """Ctrl-C or SIGTERM before a script's main (importing torch takes seconds, a large part of a short script's
    run) or after it (the interpreter shutting down): "interrupted" and EXIT_INTERRUPTED at once, as inside main,
    not a KeyboardInterrupt's traceback through the imports or a silent 143. Nothing of the script's own has begun,
    or everything has ended, so there is nothing to save."""
    os.write(2, b"interrupted\n")  # not print: the handler may have cut a write to sys.stderr short
    os._exit(EXIT_INTERRUPTED)


def stop_cleanly_outside_main() -> None:
    """Take Ctrl-C and SIGTERM as `_stopped_outside_main` does, from here until a script's main runs (main swaps in
    its own: `sigterm_as_interrupt`) and again after it. Called by the packages `train` and `scripts` as they are
    imported, and only when Python is starting a module of theirs as a script (`python -m train.pretrain`: while it
    imports the package, sys.argv[0] is "-m"), never when they are imported as a library (tests, a notebook)."""
    if sys.argv[:1] == ["-m"] and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:  # a shell's `cmd &` job ignores Ctrl-C: it still does
                signal.signal(sig, _stopped_outside_main)


def escape_what_stdout_cannot_encode() -> None:
    """Scripts print model text (any vocabulary token, a user's sentences): a stdout that cannot encode a character
    (Windows' ANSI code page, redirected to a file) writes it as a \\U escape, as Python's stderr does, not a
    UnicodeEncodeError at the end of a run. Only when a module of `train` or `scripts` runs as a script, as
    `stop_cleanly_outside_main`."""
    if sys.argv[:1] == ["-m"] and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")


@contextlib.contextmanager
def warnings_as_lines():
    """Inside, the `roberta` package's own warnings (TokenizerFitWarning, PartialLoadWarning, TargetPieceWarning:
    each says in words what differs and what it means) print as the scripts' own do, one line `warning: ...` on
    stderr, not as Python prints a warning (`file:line: TokenizerFitWarning: ...` and the package's line that
    warned, which tells a user of a script nothing). Any other warning prints as Python prints it. Told apart by
    their module, as this module imports no torch (and so not `roberta`)."""
    python_format = warnings.formatwarning

    def one_line(message, category, filename, lineno, line=None):
        if category.__module__.split(".")[0] == "roberta":
            return f"warning: {message}\n"
        return python_format(message, category, filename, lineno, line)

    warnings.formatwarning = one_line
    try:
        yield
    finally:
        warnings.formatwarning = python_format


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Inside: SIGTERM (`timeout`, CI, a scheduler, `train.gpu_session`'s deadline) is taken as Ctrl-C, a
    KeyboardInterrupt, so that a script stopped by it ends as an interrupted one (exit code 130, "interrupted")
    wherever it is, not killed silently with 143; the previous handler is restored on the way out. The training
    loop (`train.trainer.Trainer.fit`) installs its own handler for both signals while it runs (a checkpoint after
    the current step) and puts this one back after it. Main thread only (Python's rule): elsewhere it does
    nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = {signal.SIGTERM: _interrupt, signal.SIGINT: signal.default_int_handler}
    # a signal ignored stays ignored (a shell's `cmd &` job and Ctrl-C); SIGINT's own handler is Python's already,
    # unless a script started with -m (`stop_cleanly_outside_main`) put its start-up one in place
    previous = {sig: signal.getsignal(sig) for sig in taken}
    taken = {sig: handler for sig, handler in taken.items()
             if previous[sig] is not signal.SIG_IGN
             and (sig != signal.SIGINT or previous[sig] is _stopped_outside_main)}
    for sig, handler in taken.items():
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig in taken:
            signal.signal(sig, previous[sig] if previous[sig] is not None else signal.SIG_DFL)


def exit_code(main, argv=None) -> int:
    """A script's `main(argv)` -> its exit code, Ctrl-C and SIGTERM included (`sigterm_as_interrupt`), the
    package's warnings as one line each (`warnings_as_lines`):
    "interrupted" and EXIT_INTERRUPTED, not a traceback (the scripts that train save a checkpoint first:
    `train.runtime.run_main`)."""
    try:
        with sigterm_as_interrupt(), warnings_as_lines():
            return main(argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
