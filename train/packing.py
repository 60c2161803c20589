"""Packing: documents tokenized and laid end to end in full rows of a model's length, as RoBERTa's FULL-SENTENCES
input but cut at the row length; with an optional on-disk cache of the packed rows, keyed by the documents, the
tokenizer and the row length."""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import torch

from roberta.files import replaced_atomically

from .data import UNK, DataError
from .runtime import progress_bars


def _special_id(tokenizer, token: str) -> int:
    token_id = tokenizer.token_to_id(token)
    if token_id is None:
        raise ValueError(f"the tokenizer has no {token} token")
    return token_id


def packing_cache_key(documents: list[str], tokenizer, max_length: int) -> str:
    # v2: a special token written out in a document is read as text (`tokenize_documents`); v1 entries, which read
    # it as the token, are never reused
    h = hashlib.sha256(f"full-sentences-v2|{max_length}|{len(documents)}|".encode())
    h.update(tokenizer.to_str().encode())
    for doc in documents:
        h.update(doc.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:24]


def _special_tokens_as_text(tokenizer):
    """A copy of `tokenizer` that reads a special token written out in a text ("<s>", "</s>", "<pad>", "<mask>")
    as the text it is (`tokenizers`' encode_special_tokens); the caller's tokenizer is left as it is."""
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(tokenizer.to_str())
    copy.encode_special_tokens = True
    return copy


# text longer than this gets a bar while it is tokenized (where bars are drawn; else a line says it: pretrain)
LONG_TEXT_CHARS = 2_000_000


def tokenize_documents(documents: list[str], tokenizer, show_progress: bool | None = None,
                       batch_size: int = 1000) -> list[np.ndarray]:
    """Token ids of every document (no special tokens), batch-encoded, with a progress bar if long. A special
    token written out in a document is read as the text it is: an HTML strikethrough in a scraped review
    (`<s>$20</s>`) is no sequence boundary, a "<pad>" no padding the model never attends to, a "<mask>" no mask
    without a target. `<unk>` alone stays the special token, WikiText's unknown word (`_clean_line`)."""
    from tqdm.auto import tqdm

    if show_progress is None:
        show_progress = sum(map(len, documents)) > LONG_TEXT_CHARS and progress_bars()
    reader = _special_tokens_as_text(tokenizer)
    encode = getattr(reader, "encode_batch_fast", reader.encode_batch)
    unk_id = tokenizer.token_to_id(UNK)
    out = []
    with tqdm(total=len(documents), unit="doc", desc="tokenizing", disable=not show_progress) as bar:
        for start in range(0, len(documents), batch_size):
            batch = documents[start:start + batch_size]
            # each document in its parts between <unk>s (the tokenizer's own matching of <unk> encodes them apart
            # too), joined again by the <unk> id
            parts = [doc.split(UNK) if unk_id is not None else [doc] for doc in batch]
            encoded = iter(encode([part for doc in parts for part in doc], add_special_tokens=False))
            for doc in parts:
                ids = list(next(encoded).ids)
                for _ in doc[1:]:
                    ids += [unk_id, *next(encoded).ids]
                out.append(np.asarray(ids, dtype=np.int32))
            bar.update(len(batch))
    return out


def pack_sequences(documents: list[str], tokenizer, max_length: int, cache_dir=None,
                   show_progress: bool | None = None) -> torch.Tensor:
    """Documents packed end to end into rows of `max_length` tokens -> LongTensor (N, max_length).

    Documents are tokenized and concatenated into one stream with `</s>` between documents, which is cut
    into rows of `max_length - 2` tokens, each wrapped in `<s> ... </s>`. Rows cross document boundaries
    (as in RoBERTa) so no token is wasted on padding; only the last row is padded with `<pad>`. This is
    RoBERTa's FULL-SENTENCES input except for where a row ends: RoBERTa fills a row with whole sentences and
    ends it at a sentence boundary, here a row ends after exactly `max_length - 2` tokens, wherever that falls.
    With `cache_dir`, the result is saved as safetensors keyed by a hash of (documents, tokenizer.json,
    max_length) and reused: a corpus is tokenized once. The cache is optional: an entry that cannot be read is
    warned about and packed again (and replaced), and one that cannot be written (a read-only or full disk) is
    warned about and left out (`read_packing_cache`, `write_packing_cache`).
    """
    if max_length < 3:
        raise ValueError(f"max_length must be at least 3 (<s> token </s>), got {max_length}")
    cache_file = None
    if cache_dir is not None:
        cache_file = Path(cache_dir) / f"packed-{packing_cache_key(documents, tokenizer, max_length)}.safetensors"
        if (cached := read_packing_cache(cache_file, max_length)) is not None:
            return cached
    bos, eos, pad = (_special_id(tokenizer, t) for t in ("<s>", "</s>", "<pad>"))
    pieces = []
    for ids in tokenize_documents(documents, tokenizer, show_progress):
        if len(ids):
            if pieces:
                pieces.append(np.array([eos], dtype=np.int32))
            pieces.append(ids)
    if not pieces:
        raise DataError("nothing to pack: the documents hold no tokens")
    stream = np.concatenate(pieces)
    body = max_length - 2
    full, rest = divmod(len(stream), body)
    rows = np.full((full + (rest > 0), max_length), pad, dtype=np.int32)
    rows[:, 0] = bos
    rows[:full, 1:-1] = stream[:full * body].reshape(full, body)
    rows[:full, -1] = eos
    if rest:
        rows[full, 1:1 + rest] = stream[full * body:]
        rows[full, 1 + rest] = eos
    packed = torch.from_numpy(rows)
    if cache_file is not None:
        write_packing_cache(cache_file, packed, max_length)
    return packed.long()


def read_packing_cache(cache_file: Path, max_length: int) -> torch.Tensor | None:
    """The packed rows cached in `cache_file`, or None: no such file, or one that cannot be read or is not packed
    rows of `max_length` tokens (truncated, corrupt: a warning; it is packed again and replaced). A warning, not an
    error: an error would stop every later run over the same data until the user found and deleted the hashed file."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not cache_file.exists():
        return None
    try:
        rows = load_file(str(cache_file)).get("input_ids")
        if rows is None or rows.dim() != 2 or rows.shape[1] != max_length or rows.is_floating_point():
            raise ValueError(f"not packed rows of {max_length} tokens")
    except (SafetensorError, OSError, ValueError) as err:
        print(f"warning: the packing cache {cache_file} cannot be read ({err}); packing again, and replacing it",
              file=sys.stderr, flush=True)
        return None
    return rows.long()


def write_packing_cache(cache_file: Path, packed: torch.Tensor, max_length: int) -> bool:
    """Save `packed` as `cache_file` in one step (`roberta.files.replaced_atomically`: concurrent processes never
    read a half-written file). The cache is optional: a folder that cannot be made or written (read-only, a full
    disk) is a warning, the temporary file is removed, and the run goes on (the corpus is already tokenized); True
    when written."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with replaced_atomically(cache_file) as tmp:
            save_file({"input_ids": packed}, str(tmp), metadata={"max_length": str(max_length)})
        return True
    except (SafetensorError, OSError) as err:
        print(f"warning: could not write the packing cache {cache_file} ({getattr(err, 'strerror', None) or err}); "
              "going on without it",
              file=sys.stderr, flush=True)
        return False
