"""Scripts that may import both the app (demo/) and training (train/), run as modules: `python -m
scripts.load_check`, `python -m scripts.release`. `app_process` (the app in a subprocess) and `tiny_models`
(tiny random models) are shared with tests/."""
from train.exit_codes import escape_what_stdout_cannot_encode, stop_cleanly_outside_main

stop_cleanly_outside_main()  # `python -m scripts.x`: a Ctrl-C while torch loads says "interrupted", 130
escape_what_stdout_cannot_encode()  # model text on a stdout that cannot encode it: \U escapes
