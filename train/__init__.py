"""Training scripts: data (`train.data`), tokenizer training, pretraining, fine-tuning, evaluation, Hub upload."""
from .exit_codes import stop_cleanly_outside_main

stop_cleanly_outside_main()  # `python -m train.x`: a Ctrl-C while torch loads says "interrupted", 130
