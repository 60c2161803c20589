"""Shared fixtures: a tiny generated corpus, a tokenizer trained on it, and tiny saved model folders.

Everything here is built in seconds from data the tests generate; nothing is downloaded.
"""
import random

import pytest
import torch

import roberta

SUBJECTS = ["the cat", "a dog", "my friend", "the old man", "this film", "the river", "our team", "Paris"]
VERBS = ["likes", "sees", "finds", "loves", "hates", "follows", "remembers", "is near"]
OBJECTS = ["the house", "a small bird", "the city of London", "good music", "the bright sun", "France", "the sea"]
ADVERBS = ["today", "again", "quietly", "in the morning", "at night", "every day", "not at all"]


def make_sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(ADVERBS)}."
            for _ in range(n)]


@pytest.fixture(scope="session")
def sentences() -> list[str]:
    return make_sentences(400)


@pytest.fixture(scope="session")
def tokenizer(sentences):
    return roberta.train_tokenizer(sentences, vocab_size=300, min_frequency=1, show_progress=False)


@pytest.fixture(scope="session")
def tiny_config(tokenizer):
    return roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer)


def _save_with_tokenizer(model, tokenizer, folder):
    model.save_pretrained(folder)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory, tokenizer, tiny_config):
    """A saved, randomly initialised MLM folder (config.json, model.safetensors, tokenizer.json)."""
    torch.manual_seed(0)
    model = roberta.RobertaForMaskedLM(tiny_config)
    return _save_with_tokenizer(model, tokenizer, tmp_path_factory.mktemp("tiny-mlm"))


@pytest.fixture(scope="session")
def tiny_clf_dir(tmp_path_factory, tokenizer, tiny_config):
    """A saved, randomly initialised sentiment classifier folder with labels negative/positive."""
    torch.manual_seed(0)
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, id2label={0: "negative", 1: "positive"})
    model = roberta.RobertaForSequenceClassification(config)
    return _save_with_tokenizer(model, tokenizer, tmp_path_factory.mktemp("tiny-clf"))
