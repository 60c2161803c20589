"""Training scripts: data (`train.data`), tokenizer training, pretraining, fine-tuning, evaluation, Hub upload."""
