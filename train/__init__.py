"""Training scripts (tokenizer, pretraining, fine-tuning, evaluation, calibration, weight averaging, export, Hub
upload, the experiments) over a small training library (trainer, data, tables, checkpoints, runtime, ...): the
README's "What is inside" lists every module."""
from .exit_codes import escape_what_stdout_cannot_encode, stop_cleanly_outside_main

stop_cleanly_outside_main()  # `python -m train.x`: a Ctrl-C while torch loads says "interrupted", 130
escape_what_stdout_cannot_encode()  # model text on a stdout that cannot encode it: \U escapes
