"""The tiny random models the tests and `python -m scripts.load_check --tiny` run the app with: a generated
corpus, a 300-token tokenizer trained on it, and randomly initialised "tiny" MLM and classifier folders.
Built in seconds; nothing is downloaded."""
from __future__ import annotations

import random
from pathlib import Path

import torch

import roberta
from roberta.tokenizer import write_tokenizer_json

SUBJECTS = ["the cat", "a dog", "my friend", "the old man", "this film", "the river", "our team", "Paris"]
VERBS = ["likes", "sees", "finds", "loves", "hates", "follows", "remembers", "is near"]
OBJECTS = ["the house", "a small bird", "the city of London", "good music", "the bright sun", "France", "the sea"]
ADVERBS = ["today", "again", "quietly", "in the morning", "at night", "every day", "not at all"]
LABELS = {0: "negative", 1: "positive"}


def make_sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(ADVERBS)}."
            for _ in range(n)]


def tiny_tokenizer(sentences: list[str] | None = None):
    """A byte-level BPE of 300 tokens trained on `sentences` (default: 400 generated ones)."""
    return roberta.train_tokenizer(sentences or make_sentences(400), vocab_size=300, min_frequency=1,
                                   show_progress=False)


def save_tiny_model(folder, tokenizer, classifier: bool = False) -> Path:
    """A randomly initialised (seed 0) "tiny" MLM, or classifier with labels negative/positive, saved with its
    tokenizer in `folder` (config.json, model.safetensors, tokenizer.json)."""
    folder = Path(folder)
    extra = {"id2label": LABELS} if classifier else {}
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, **extra)
    torch.manual_seed(0)
    model = (roberta.RobertaForSequenceClassification if classifier else roberta.RobertaForMaskedLM)(config)
    model.save_pretrained(folder)
    write_tokenizer_json(tokenizer, folder / "tokenizer.json")
    return folder
