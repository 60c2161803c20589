"""Byte-level BPE tokenizer with RoBERTa's special tokens, trained and saved with `tokenizers`.

The saved `tokenizer.json` also loads in `transformers.PreTrainedTokenizerFast(tokenizer_file=...)`, and
roberta-base's own `tokenizer.json` loads here with the same code.
"""
from collections.abc import Iterable

import json
import os
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from .hub import TOKENIZER_NAME, ModelLoadError, ModelNotFoundError, resolve_file

# ids 0..4. roberta-base has <s> <pad> </s> <unk> at 0..3 too but <mask> last (50264); code reads ids by name.
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 50265, min_frequency: int = 2,
                    show_progress: bool = True) -> Tokenizer:
    """Train byte-level BPE on an iterator of texts; `<s> ... </s>` is added around every input."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    specials = [AddedToken(t, special=True, lstrip=(t == "<mask>"), normalized=False) for t in SPECIAL_TOKENS]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=show_progress,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    # <mask> absorbs the space before it, so "capital of <mask>." predicts " Paris" (a word with its space)
    tokenizer.add_special_tokens([AddedToken("<mask>", special=True, lstrip=True, normalized=False)])
    tokenizer.post_processor = processors.RobertaProcessing(
        ("</s>", tokenizer.token_to_id("</s>")), ("<s>", tokenizer.token_to_id("<s>")),
        add_prefix_space=False, trim_offsets=True,
    )
    return tokenizer


def load_tokenizer(path_or_hub_id, **hub_kwargs) -> Tokenizer:
    """A `tokenizer.json` file, a folder holding one, or a Hub repo id. Errors are `roberta.ModelLoadError`s
    naming the file (`ModelNotFoundError` when it does not exist)."""
    path = os.fspath(path_or_hub_id)
    if not path.endswith(".json"):
        path = resolve_file(path, TOKENIZER_NAME, **hub_kwargs)
    elif not os.path.isfile(path):
        raise ModelNotFoundError(f"{path}: no such tokenizer file")
    try:
        tokenizer = Tokenizer.from_file(path)
    except Exception as err:  # tokenizers raises a bare Exception for unreadable or malformed JSON
        raise ModelLoadError(f"{path}: not a readable tokenizer.json (truncated or corrupt?): {err}") from None
    missing = [t for t in SPECIAL_TOKENS if tokenizer.token_to_id(t) is None]
    if missing:
        raise ModelLoadError(f"{path} lacks RoBERTa's special tokens {missing}")
    return tokenizer


def lowercasing(tokenizer: Tokenizer) -> Tokenizer:
    """A copy of `tokenizer` that lower-cases text before BPE (special tokens such as <mask> are untouched).

    The SST-2 classifier is trained on lower-cased text; baking the lower-casing into its tokenizer.json
    means every user of the folder (our pipelines, the app, `transformers`) feeds it the same way.
    """
    copy = Tokenizer.from_str(tokenizer.to_str())
    lower = normalizers.Lowercase()
    copy.normalizer = lower if copy.normalizer is None else normalizers.Sequence([copy.normalizer, lower])
    return copy


def save_tokenizer(tokenizer: Tokenizer, folder, model_max_length: int) -> None:
    """Write folder/tokenizer.json plus the tokenizer_config.json `transformers` reads (its length limit, and
    the fast tokenizer class so it uses tokenizer.json exactly as saved, normalizer included)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / TOKENIZER_NAME))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": model_max_length,
              "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
              "cls_token": "<s>", "pad_token": "<pad>", "mask_token": "<mask>"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
