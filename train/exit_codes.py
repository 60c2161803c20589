"""How a script ends: the exit codes of every script in `train/` and `scripts/` (`train.runtime` says what each
means), and Ctrl-C as one of them. No torch here: a script that needs none (`train.gpu_transfer`,
`scripts.load_check`) imports this without loading it."""
import sys

EXIT_OK, EXIT_FAILED, EXIT_USER_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


def exit_code(main, argv=None) -> int:
    """A script's `main(argv)` -> its exit code, Ctrl-C included: "interrupted" and EXIT_INTERRUPTED, not a
    traceback (the scripts that train save a checkpoint first: `train.runtime.run_main`)."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
