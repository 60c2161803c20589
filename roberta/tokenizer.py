"""Byte-level BPE tokenizer with RoBERTa's special tokens, trained and saved with `tokenizers`.

The saved `tokenizer.json` also loads in `transformers.PreTrainedTokenizerFast(tokenizer_file=...)`, and
roberta-base's own `tokenizer.json` loads here with the same code. `encode` turns texts into model inputs.
"""
import hashlib
import json
import os
import sys
import warnings
import weakref
from collections.abc import Iterable, Mapping

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from .config import MIN_LENGTH, whole_number
from .files import write_atomic
from .hub import TOKENIZER_NAME, ModelLoadError, ModelNotFoundError, local_folder, resolve_file

# ids 0..4. roberta-base has <s> <pad> </s> <unk> at 0..3 too but <mask> last (50264); code reads ids by name.
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 50265, min_frequency: int = 2,
                    show_progress: bool = True) -> Tokenizer:
    """Train byte-level BPE on an iterator of texts; `<s> ... </s>` is added around every input."""
    if isinstance(texts, str):  # itself an iterable of strings: it trained on its characters, one by one
        raise ValueError("texts must be a list (or another iterable) of texts, got a single string: pass [text]")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    # <mask> absorbs the space before it: "Paris is the capital of <mask>." predicts " France" (a word with its space)
    specials = [AddedToken(t, special=True, lstrip=(t == "<mask>"), normalized=False) for t in SPECIAL_TOKENS]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=show_progress,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)  # the specials keep their lstrip (tokenizers 0.23.3)
    tokenizer.post_processor = processors.RobertaProcessing(
        ("</s>", tokenizer.token_to_id("</s>")), ("<s>", tokenizer.token_to_id("<s>")),
        add_prefix_space=False, trim_offsets=True,
    )
    return tokenizer


def load_tokenizer(path_or_hub_id, **hub_kwargs) -> Tokenizer:
    """A `tokenizer.json` file, a folder holding one, or a Hub repo id (only that, and no local file looked at,
    with `hub_only=True`). Errors are `roberta.ModelLoadError`s naming the file (`ModelNotFoundError` when it does
    not exist)."""
    if not isinstance(path_or_hub_id, (str, os.PathLike)):
        hint = (": it is one already" if isinstance(path_or_hub_id, Tokenizer) else
                ": a transformers tokenizer holds this package's tokenizers.Tokenizer as .backend_tokenizer (and "
                "every function of this package that takes a tokenizer takes either)"
                if hasattr(path_or_hub_id, "backend_tokenizer") else "")
        raise TypeError(f"load_tokenizer takes a tokenizer.json path, a model folder or a Hub repo id, got "
                        f"{type(path_or_hub_id).__name__}{hint}")
    path = os.fspath(path_or_hub_id)
    if hub_kwargs.get("hub_only"):
        tokenizer_file = resolve_file(path, TOKENIZER_NAME, **hub_kwargs)
        return _read_tokenizer(tokenizer_file)
    if path.startswith("~"):
        path = os.path.expanduser(path)
    if os.path.isfile(path) and not path.endswith(".json"):  # a tokenizer file of another name
        raise ModelLoadError(f"{path} is not a tokenizer: give a tokenizer.json, a model folder holding one, or a Hub "
                             "repo id")
    if not path.endswith(".json") or os.path.isdir(path):  # a folder named m.json is a folder
        path = resolve_file(path, TOKENIZER_NAME, **hub_kwargs)
    elif not os.path.isfile(path):
        raise ModelNotFoundError(f"{path}: no such tokenizer file")
    return _read_tokenizer(path)


def as_tokenizer(tokenizer, **hub_kwargs) -> Tokenizer:
    """The `tokenizers.Tokenizer` a `tokenizer` argument means: one as it is, a `transformers` fast tokenizer's
    `.backend_tokenizer`, or one loaded by `load_tokenizer` from a tokenizer.json path, a model folder or a Hub repo
    id (`hub_kwargs` passed on); a TypeError naming the argument for anything else. What every function of the
    package that takes a tokenizer accepts (a path is read at every call: load it once to use it often)."""
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if isinstance(backend, Tokenizer):
        return backend
    if isinstance(tokenizer, (str, os.PathLike)):
        return load_tokenizer(tokenizer, **hub_kwargs)
    raise TypeError("tokenizer must be a tokenizers.Tokenizer, a transformers fast tokenizer, a tokenizer.json path, "
                    f"a model folder or a Hub repo id, got {type(tokenizer).__name__}")


def _read_tokenizer(path: str) -> Tokenizer:
    """The tokenizer in the tokenizer.json at `path`, checked (`check_special_tokens`)."""
    try:
        tokenizer = Tokenizer.from_file(path)
    except Exception as err:  # tokenizers raises a bare Exception for unreadable or malformed JSON
        if os.path.basename(path) in ("config.json", "metrics.json", "tokenizer_config.json"):  # a model folder's
            raise ModelLoadError(f"{path} is a model folder's {os.path.basename(path)}, not a tokenizer: give the "
                                 f"folder ({os.path.dirname(path) or '.'}) or its tokenizer.json") from None
        raise ModelLoadError(f"{path}: not a readable tokenizer.json (truncated or corrupt?): {err}") from None
    check_special_tokens(tokenizer, path)
    return tokenizer


def check_special_tokens(tokenizer: Tokenizer, source) -> None:
    """A ModelLoadError naming `source` when the tokenizer lacks one of RoBERTa's special tokens (<s>, <pad>,
    </s>, <unk>, <mask>: the model's inputs need them)."""
    missing = [t for t in SPECIAL_TOKENS if tokenizer.token_to_id(t) is None]
    if missing:
        raise ModelLoadError(f"{source} lacks RoBERTa's special tokens {missing}")


# A checkpoint may have more embedding rows than its tokenizer has tokens, rounded up to a multiple of one of these
# (matrix sizes that run faster): rows no token id reaches, loaded without a word. Other extra rows are warned about.
PADDED_TO = (8, 64, 128)
# the special tokens whose ids config.json gives too: the model numbers positions by pad_token_id, and reads neither
# bos_token_id nor eos_token_id (the tokenizer adds <s> and </s> by its own ids)
CONFIG_IDS = {"<s>": "bos_token_id", "</s>": "eos_token_id", "<pad>": "pad_token_id"}


class TokenizerFitWarning(UserWarning):
    """A tokenizer that differs from its model's config in a way the model runs with (`check_fits_model`)."""


def check_fits_model(tokenizer: Tokenizer, config, source) -> list[str]:
    """Whether the tokenizer can feed the model `config` describes, as far as sizes and ids tell; `source` names it
    in the messages ("mlm/tokenizer.json", "the tokenizer"). The one rule of every loader (the pipelines, the app's
    model box, `train.evaluate`); training refuses any difference in size.

    A ModelLoadError for what breaks the model: more tokens than embedding rows (ids with no row), a special token
    whose id has no row, or a <pad> id other than the config's pad_token_id (the model numbers positions by that id:
    it would take a token for padding, or padding for text). A TokenizerFitWarning for what runs, as it does in
    `transformers`: more rows than tokens, unless the extra rows only round the size up to a multiple of one of
    `PADDED_TO` (roberta-base's 50,265 tokens in 50,272 or 50,304 rows: silent; in 52,000 rows, set by hand: warned);
    and a <s> or </s> id other than the config's bos_token_id or eos_token_id, fields the model never reads.
    Returns the warnings' messages (none when it fits), for a caller that shows them itself."""
    tokens, rows = tokenizer.get_vocab_size(), config.vocab_size
    if tokens > rows:
        raise ModelLoadError(f"{source} has {tokens:,} tokens but the model only {rows:,}: they do not belong "
                             "together; use the tokenizer the model was trained with")
    beyond = {token: token_id for token in SPECIAL_TOKENS
              if (token_id := tokenizer.token_to_id(token)) is not None and token_id >= rows}
    if beyond:
        raise ModelLoadError(f"{source} gives {', '.join(f'{t} the id {i:,}' for t, i in beyond.items())}, beyond "
                             f"the model's {rows:,} embedding rows: use the tokenizer the model was trained with")
    pad_id = tokenizer.token_to_id("<pad>")
    if pad_id != config.pad_token_id:
        raise ModelLoadError(f"{source} gives <pad> the id {pad_id}, but the model's config has pad_token_id "
                             f"{config.pad_token_id}: the model numbers positions by that id, and would number this "
                             "tokenizer's inputs wrongly; use the tokenizer the model was trained with")
    notes = []
    if tokens < rows and rows not in {-(-tokens // n) * n for n in PADDED_TO}:
        notes.append(f"{source} has {tokens:,} tokens but the model {rows:,} embedding rows: the last "
                     f"{rows - tokens:,} rows are no token's. Harmless when the vocabulary size was set by hand; if "
                     "the model answers nonsense, the tokenizer is another model's")
    for token, field in CONFIG_IDS.items():
        token_id, config_id = tokenizer.token_to_id(token), getattr(config, field)
        if token != "<pad>" and token_id != config_id:
            notes.append(f"{source} gives {token} the id {token_id}, but the model's config has {field} "
                         f"{config_id}: the tokenizer's id is used (the model does not read {field})")
    for note in notes:  # at the caller's line: `roberta.pipeline(...)` in a script, not this package's
        warnings.warn(note, TokenizerFitWarning, stacklevel=_first_frame_outside_package())
    return notes


def _first_frame_outside_package() -> int:
    """The `stacklevel` of `warnings.warn` (called in the function that calls this one) that names the first caller
    outside the `roberta` package, however deep inside it the call came from (a pipeline, a loader)."""
    frame, level = sys._getframe(2), 2  # the caller of the function that warns: stacklevel 2
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "roberta":
        frame, level = frame.f_back, level + 1
    return level


def _check_max_length(max_length, name: str = "max_length") -> int:
    """`max_length` as an int; a ValueError naming `name` for a length that holds no token of the text: <s> and
    </s> take two (0 and 1 were ignored, 2 gave every text as <s></s>)."""
    length = whole_number(max_length)
    if length is None or length < MIN_LENGTH:
        raise ValueError(f"{name} must be a whole number of at least {MIN_LENGTH} (<s>, a token, </s>), "
                         f"got {max_length!r}")
    return length


def text_list(texts, *, surrogates: str = "refuse") -> list[str]:
    """`texts` (a text, or any iterable of texts: a list, a generator, a pandas Series) as a list of strings, empty
    when it is; a ValueError in plain words for anything else (bytes and a dict too: they iterate as numbers and as
    keys; both were `tokenizers`' "TextEncodeInput must be Union[...]"). A lone surrogate (half of a UTF-16 pair,
    from broken copy-paste) cannot be tokenized: `surrogates="refuse"` names the text in a ValueError
    (`refuse_lone_surrogate`), "replace" reads it as "?" (the pipelines: text as people paste it)."""
    if surrogates not in ("refuse", "replace"):
        raise ValueError(f"surrogates must be 'refuse' or 'replace', got {surrogates!r}")
    batch = None
    if isinstance(texts, str):
        batch = [texts]
    elif not isinstance(texts, (bytes, bytearray, Mapping)):
        try:
            batch = list(texts)
        except TypeError:  # not iterable
            pass
    if batch is None:
        raise ValueError(f"expected a text or a list of texts, got {type(texts).__name__}")
    for i, text in enumerate(batch):
        which = which_text(texts, i, len(batch))
        if not isinstance(text, str):
            raise ValueError(f"expected text (a string), got {type(text).__name__} ({which})")
        if surrogates == "refuse":
            refuse_lone_surrogate(text, which)
    if surrogates == "replace":
        batch = [text.encode("utf-8", errors="replace").decode("utf-8") for text in batch]
    return batch


def which_text(texts, i: int, n: int) -> str:
    """How an error names text `i` of `n`: "the text" when the call was given one, else "text 2 of 3"."""
    return "the text" if isinstance(texts, str) else f"text {i + 1} of {n}"


def refuse_lone_surrogate(text: str, named: str) -> None:
    """A ValueError naming the text (`named`: "the text", "the target 'a\\udc80'") when it holds a lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"{named} holds a lone surrogate ({text[err.start]!r} at character {err.start}), half of a "
                         "UTF-16 pair and not a character: remove it") from None


def for_model(tokenizer: Tokenizer, max_length: int | None, stride: int = 0) -> Tokenizer:
    """A copy of `tokenizer` that cuts every text to `max_length` tokens (`<s> ... </s>`, </s> kept last) and
    pads a batch with <pad> to its longest text: `tokenizers`' own truncation and padding (`max_length` None:
    neither cut nor padded, as `encode_windows` reads a text). Each encoding's `overflowing` says whether the
    text was cut. The caller's tokenizer is left as it is; the copy is made once per tokenizer, length and
    stride (parsing a 50k vocabulary takes ~0.1 s, too slow for every request), and made again when the
    tokenizer has changed since: tokens added (its vocabulary size is part of the key), or another normalizer,
    pre-tokenizer or post-processor set (theirs too: a few microseconds to read)."""
    copies = _FOR_MODEL.setdefault(tokenizer, {})
    steps = tuple(None if step is None else step.__getstate__()
                  for step in (tokenizer.normalizer, tokenizer.pre_tokenizer, tokenizer.post_processor))
    key = (max_length, stride, tokenizer.get_vocab_size(with_added_tokens=True), steps)
    if key not in copies:
        copy = Tokenizer.from_str(tokenizer.to_str())
        copy.no_truncation()
        copy.no_padding()
        if max_length is not None:
            copy.enable_truncation(max_length, stride=stride)  # counts the <s> and </s> the post-processor adds
            copy.enable_padding(pad_id=tokenizer.token_to_id("<pad>"), pad_token="<pad>")
        copies[key] = copy
    return copies[key]


_FOR_MODEL: "weakref.WeakKeyDictionary[Tokenizer, dict[tuple, Tokenizer]]" = weakref.WeakKeyDictionary()


def encode(tokenizer: Tokenizer, texts, max_length: int):
    """Model inputs for `texts` (a string or a list): input_ids (B, T) long, attention_mask (B, T) long, and
    truncated: list[bool], whether each text was cut to `max_length` tokens (see `for_model`). `tokenizer`: what
    `as_tokenizer` takes. A text with a lone surrogate is refused (`text_list`); the pipelines, which take text as
    people paste it, read one as "?" instead, before they call this."""
    tokenizer = as_tokenizer(tokenizer)
    max_length = _check_max_length(max_length)
    texts = text_list(texts)
    if not texts:
        return torch.zeros(0, 0, dtype=torch.long), torch.zeros(0, 0, dtype=torch.long), []
    encodings = for_model(tokenizer, max_length).encode_batch(texts)
    input_ids = torch.tensor([e.ids for e in encodings], dtype=torch.long)  # (B, T)
    attention_mask = torch.tensor([e.attention_mask for e in encodings], dtype=torch.long)  # (B, T)
    return input_ids, attention_mask, [bool(e.overflowing) for e in encodings]


WINDOW_STRIDE = 32  # tokens that consecutive windows of a long text share


def window_stride(max_length: int) -> int:
    """The overlap of consecutive windows: WINDOW_STRIDE, at most a quarter of a short model's length (every
    window must move forward by more than it shares)."""
    return max(0, min(WINDOW_STRIDE, max_length // 4))


def encode_windows(tokenizer: Tokenizer, texts, max_length: int, stride: int | None = None):
    """Model inputs for every part of `texts` (a string or a list): a text longer than `max_length` tokens
    becomes overlapping windows of at most `max_length` tokens, each `<s> ... </s>`, sharing `stride` tokens
    (default `window_stride(max_length)`) with the one before, so that no token is lost. Returns input_ids
    (W, T) long, attention_mask (W, T) long and owner (W,) long: the index in `texts` of each window; windows
    of one text are consecutive, its first window first (the one `encode` gives). `tokenizer`: what
    `as_tokenizer` takes."""
    tokenizer = as_tokenizer(tokenizer)
    max_length = _check_max_length(max_length)
    texts = text_list(texts)
    given = window_stride(max_length) if stride is None else stride
    stride = whole_number(given)
    if stride is None or not 0 <= stride < max_length - 2:
        raise ValueError(f"stride must be a whole number from 0 to {max_length - 3} (a window of {max_length} "
                         f"tokens holds {max_length - 2} of the text, and must move on by at least one), "
                         f"got {given!r}")
    if not texts:
        empty = torch.zeros(0, 0, dtype=torch.long)
        return empty, empty, torch.zeros(0, dtype=torch.long)
    # The windows are cut here, not by `tokenizers`' truncation with `stride`: its `overflowing` windows depend
    # on its version (0.23.2 gives one short window after the first, and the rest of the text is lost).
    windows, owner = [], []
    for index, encoding in enumerate(for_model(tokenizer, None).encode_batch(texts)):
        own = [i for i, seq in enumerate(encoding.sequence_ids) if seq is not None]  # the text's tokens
        ids = encoding.ids
        head = ids[:own[0]] if own else ids  # what the post-processor adds: <s> ... </s>
        tail = ids[own[-1] + 1:] if own else []
        text = ids[own[0]:own[-1] + 1] if own else []
        room = max_length - len(head) - len(tail)  # the text's tokens a window holds
        if room - stride < 1:
            raise ValueError(f"a window of {max_length} tokens holds {room} of the text, which must be more than "
                             f"the stride, {stride}")
        start = 0
        while True:
            windows.append([*head, *text[start:start + room], *tail])
            owner.append(index)
            if start + room >= len(text):
                break
            start += room - stride
    width = max(len(w) for w in windows)
    pad_id = tokenizer.token_to_id("<pad>")
    input_ids = torch.full((len(windows), width), pad_id, dtype=torch.long)  # (W, T)
    attention_mask = torch.zeros(len(windows), width, dtype=torch.long)  # (W, T)
    for row, window in enumerate(windows):
        input_ids[row, :len(window)] = torch.tensor(window, dtype=torch.long)
        attention_mask[row, :len(window)] = 1
    return input_ids, attention_mask, torch.tensor(owner, dtype=torch.long)


def mean_over_windows(values: torch.Tensor, owner: torch.Tensor, num_texts: int) -> torch.Tensor:
    """(num_texts, ...) the mean of `values` (W, ...) over each text's windows (`encode_windows`' owner)."""
    sums = torch.zeros(num_texts, *values.shape[1:], dtype=values.dtype).index_add_(0, owner, values)
    counts = torch.bincount(owner, minlength=num_texts).clamp(min=1).to(values.dtype)  # (num_texts,)
    return sums / counts.view(-1, *[1] * (values.dim() - 1))


def vocab_digest(tokenizer: Tokenizer) -> str:
    """A short fingerprint of a tokenizer's vocabulary (its entries in id order): data computed with one
    tokenizer, such as `train.token_counts`' counts per token id, applies to a model only if its tokenizer
    has the same fingerprint."""
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    ordered = "\n".join(token for token, _ in sorted(vocab.items(), key=lambda item: item[1]))
    return hashlib.sha256(ordered.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def save_tokenizer(tokenizer: Tokenizer, folder, model_max_length: int) -> None:
    """Write folder/tokenizer.json plus the tokenizer_config.json `transformers` reads (its length limit, and
    the class that reads tokenizer.json as saved, normalizer included: `tokenizer_class`). `model_max_length`:
    the model's max_length, a whole number of at least MIN_LENGTH. `tokenizer`: what `as_tokenizer` takes."""
    tokenizer = as_tokenizer(tokenizer)  # before anything is written, as the length's check
    model_max_length = _check_max_length(model_max_length, "model_max_length")
    folder = local_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_tokenizer_json(tokenizer, folder / TOKENIZER_NAME)
    save_tokenizer_config(folder, model_max_length, tokenizer)


def write_tokenizer_json(tokenizer: Tokenizer, path) -> None:
    """`tokenizer` as the tokenizer.json `path`, as `Tokenizer.save` writes it, but in one step
    (`roberta.files.write_atomic`): a full disk leaves the file that was there, not an empty one, and is a
    `WriteError` naming it, not `tokenizers`' bare Exception."""
    write_atomic(path, tokenizer.to_str(pretty=True))


# transformers' tokenizer classes tokenizer_config.json may name (`tokenizer_class`)
ROBERTA_TOKENIZER_CLASS, GENERIC_TOKENIZER_CLASS = "RobertaTokenizer", "PreTrainedTokenizerFast"


def _steps(tokenizer: Tokenizer) -> dict:
    """A tokenizer's steps as tokenizer.json writes them, its BPE's options without the vocabulary and merges (no
    prefix or suffix, written None or "", is one)."""
    data = json.loads(tokenizer.to_str())
    model = {key: value for key, value in data["model"].items() if key not in ("vocab", "merges")}
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        model[key] = model.get(key) or None
    return {"model": model, **{key: data.get(key) for key in ("normalizer", "pre_tokenizer", "post_processor",
                                                               "decoder")}}


def tokenizer_class(tokenizer: Tokenizer) -> str:
    """The `tokenizer_class` tokenizer_config.json names for `tokenizer`. `transformers.RobertaTokenizer` (5.x)
    does not read tokenizer.json's steps: it rebuilds the tokenizer from the vocabulary, merges and added tokens,
    as a byte-level BPE around `<s> ... </s>` with no normalizer. For a tokenizer that is exactly that (this
    project's MLM's) it is ROBERTA_TOKENIZER_CLASS: the same ids, and `add_prefix_space=True` (pre-split words)
    works, which the generic class ignores. For any other (a lower-casing classifier's, whose normalizer the
    rebuild would drop; SentencePiece's) GENERIC_TOKENIZER_CLASS, which reads tokenizer.json as saved."""
    if any(tokenizer.token_to_id(token) is None for token in SPECIAL_TOKENS):
        return GENERIC_TOKENIZER_CLASS
    rebuilt = Tokenizer(models.BPE(dropout=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    rebuilt.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    rebuilt.decoder = decoders.ByteLevel()
    rebuilt.post_processor = processors.RobertaProcessing(("</s>", tokenizer.token_to_id("</s>")),
                                                          ("<s>", tokenizer.token_to_id("<s>")),
                                                          trim_offsets=True, add_prefix_space=False)
    return ROBERTA_TOKENIZER_CLASS if _steps(tokenizer) == _steps(rebuilt) else GENERIC_TOKENIZER_CLASS


def save_tokenizer_config(folder, model_max_length: int, tokenizer: Tokenizer | None = None) -> None:
    """folder/tokenizer_config.json alone, as `save_tokenizer` writes it beside tokenizer.json: the class for
    `tokenizer` (`tokenizer_class`; None: for the folder's tokenizer.json, the generic class without one)."""
    model_max_length = _check_max_length(model_max_length, "model_max_length")  # never -5 or None in the file
    folder = local_folder(folder)
    if tokenizer is None and (folder / TOKENIZER_NAME).is_file():
        try:
            tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_NAME))
        except Exception:  # tokenizers' bare Exception: a file that does not load is refused where it is loaded
            tokenizer = None
    config = {"tokenizer_class": tokenizer_class(tokenizer) if tokenizer is not None else GENERIC_TOKENIZER_CLASS,
              "model_max_length": model_max_length,
              "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
              "cls_token": "<s>", "pad_token": "<pad>", "mask_token": "<mask>"}
    write_atomic(folder / "tokenizer_config.json", json.dumps(config, indent=2) + "\n")
