"""The "Tokens" tab: how RoBERTa's byte-level BPE tokenizer reads a text.

Byte-level BPE (GPT-2's, which RoBERTa reuses) works in two stages. The pre-tokenizer cuts the text into
pre-tokens (a word with the space before it, a run of digits, of punctuation, of whitespace) and writes each
one byte by byte, every byte as one printable character (GPT-2's bytes-to-unicode map: a space is "Ġ", a newline
"Ċ", the two bytes of "é" are "Ã©"). The BPE model then starts from those single bytes and, again and again,
joins the neighbouring pair with the lowest merge rank (the order in which training learned the merges: the
most frequent pair first) until no pair of neighbours is a learned merge. What is left are the tokens.

`token_rows` and `tokens_html` show a whole text as the model reads it; `pretokens`, `merge_steps` and
`merges_html` replay the merges of one pre-token step by step. Every byte is in the vocabulary, so any text can
be written and `<unk>` is never needed; a rare character is left as several byte pieces, which
`demo.formatting.readable` shows as "⟨byte 0xF0⟩" (the alphabet itself is `demo.byte_level`).
"""
from __future__ import annotations

import html
import json
import weakref
from dataclasses import dataclass

from tokenizers import models

from roberta.config import RobertaConfig

from .byte_level import bytes_of, is_partial, text_of
from .formatting import SPACE_LABEL, readable, show_whitespace
from .tokens_view import tokenize, word_spans
from .training_counts import counts_css, counts_details

MAX_PRETOKEN_BYTES = 40  # the longest pre-token, in bytes (= starting pieces), `merge_steps` replays
MAX_PRETOKENS = 200  # the most (distinct) pre-tokens `pretokens` lists for a picker
PRETOKEN_TEXT_CHARS = 4000  # `pretokens` reads at most this much of a text (cut before a word)
GPT2_MERGES = 50_000  # GPT-2's tokenizer, which RoBERTa reuses, learned this many merges (its vocab.bpe)
GPT2_VOCAB_SIZE = 256 + GPT2_MERGES + 1  # its 256 bytes, one token per merge and <|endoftext|>
ROBERTA_VOCAB_SIZE = RobertaConfig.vocab_size  # roberta-base's: GPT-2's, 5 special tokens, 3 unused fillers
COMPARE_WITH = "FacebookAI/roberta-base"  # the Hub model the Tokens tab's note suggests, offered in its model box


# ---- a text's tokens ---------------------------------------------------------------------------------------

def token_rows(tokenizer, text: str, max_length: int, counts=None) -> dict:
    """`text` as the model reads it: `<s> ... </s>`, cut to `max_length` tokens as the pipelines cut it
    (`demo.tokens_view.tokenize`, i.e. `roberta.tokenizer.for_model(tokenizer, max_length).encode`).

    Returns {"tokens": [{"token": the vocabulary string ("Ġcapital"), "id", "text": the characters of `text` it
    covers ("" for special tokens; every byte piece of one character covers that whole character, so several
    tokens may share one character), "start", "end": its character span, "special": bool, "word_start": bool
    (the first token of a whitespace-separated word; a token of whitespace alone counts with the word after
    it; "<mask>" standing alone counts)}], "characters", "bytes", "words": of the whole `text`, "truncated":
    bool, "max_length", "read_characters": the characters up to the end of the last token read, "read_words":
    the words that start before it, "tokens_per_word": regular (non-special) tokens / read_words (0 when no
    words): tokens per word of the part the model reads, which is the whole text unless it was cut}. Given
    `counts` (`demo.training_counts.TrainingCounts` of the tokenizer's vocabulary), each regular token also has
    "seen": {kind of pretraining text: how often it holds the token}."""
    read = tokenize(tokenizer, text, max_length)
    words = word_spans(text)
    starts = {start for start, _ in words}
    rows = []
    for i, (token_id, (start, end), special) in enumerate(zip(read.ids, read.offsets, read.special)):
        rows.append({"token": tokenizer.id_to_token(token_id) or read.pieces[i], "id": token_id,
                     "text": "" if special else text[start:end], "start": start, "end": end, "special": special,
                     # a special token inside the text ("<mask>") starts a word too when it stands alone
                     "word_start": read.word_start[i] or (special and end > start and start in starts)})
        if counts is not None and not special:
            rows[-1]["seen"] = dict(zip(counts.names, counts.seen(token_id)))
    regular = [row for row in rows if not row["special"]]
    read_end = max((row["end"] for row in rows), default=0)  # a <mask> in the text is read too; <s>, </s>: (0, 0)
    read_words = len(words) if not read.truncated else sum(start < read_end for start, _ in words)
    return {"tokens": rows, "characters": len(text), "bytes": len(text.encode("utf-8", "surrogatepass")),
            "words": len(words), "truncated": read.truncated, "max_length": max_length,
            "read_characters": len(text) if not read.truncated else read_end, "read_words": read_words,
            "tokens_per_word": len(regular) / read_words if read_words else 0.0}


# ---- the BPE model, replayed -------------------------------------------------------------------------------

@dataclass
class _Bpe:
    """What the replay needs of a tokenizer's BPE model, read once from its JSON."""

    ranks: dict[tuple[str, str], int]  # merge (left, right) -> rank, its 0-based place in the merges list
    vocab: dict[str, int]
    unk_token: str | None
    fuse_unk: bool
    byte_fallback: bool
    prefix: str  # continuing_subword_prefix ("" for byte-level BPE)
    suffix: str  # end_of_word_suffix ("" for byte-level BPE)
    ignore_merges: bool  # a word that is in the vocabulary is taken whole, without merges


# tokenizer -> its parsed BPE; weak keys, so a Hub model's tokenizer the app lets go of is freed with it
_BPE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _has_byte_level(pre_tokenizer: dict | None) -> bool:
    if not pre_tokenizer:
        return False
    if pre_tokenizer.get("type") == "Sequence":
        return any(map(_has_byte_level, pre_tokenizer.get("pretokenizers", [])))
    return pre_tokenizer.get("type") == "ByteLevel"


def _bpe(tokenizer) -> _Bpe:
    """The tokenizer's BPE model (parsed once per tokenizer; serializing a 50k vocabulary takes ~0.1 s).
    ValueError, in words a user reads, for a tokenizer that is not byte-level BPE."""
    cached = _BPE.get(tokenizer)
    if cached is not None:
        return cached
    if not isinstance(tokenizer.model, models.BPE):
        raise ValueError(f"This tokenizer is not BPE (its model is {type(tokenizer.model).__name__}), so there "
                         "are no merges to replay.")
    data = json.loads(tokenizer.to_str())
    if not _has_byte_level(data.get("pre_tokenizer")):
        raise ValueError("This tokenizer is BPE but not byte-level BPE (it has no ByteLevel pre-tokenizer), "
                         "so this view cannot show its pieces as bytes.")
    model, ranks = data["model"], {}
    for rank, merge in enumerate(model["merges"]):
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        ranks[left, right] = rank  # as the library builds its map: a repeated merge keeps its last rank
    parsed = _Bpe(ranks, model["vocab"], model.get("unk_token"), bool(model.get("fuse_unk")),
                  bool(model.get("byte_fallback")), model.get("continuing_subword_prefix") or "",
                  model.get("end_of_word_suffix") or "", bool(model.get("ignore_merges")))
    _BPE[tokenizer] = parsed
    return parsed


def _start(bpe: _Bpe, word: str) -> list[str]:
    """The pieces BPE starts from: one per character of the byte-level pre-token, i.e. one per byte (with the
    model's subword prefix / word suffix, if it has them); a character not in the vocabulary becomes
    `<unk>` (fused with its neighbours with fuse_unk), the `<0xXX>` bytes of its piece (prefix and suffix
    included) with byte_fallback, or is dropped when the model has no unk token: as `tokenizers`' BPE model
    does, which also leaves a pending `<unk>` until the next piece in the vocabulary, after any byte pieces."""
    pieces, unk = [], None
    for i, c in enumerate(word):
        s = (bpe.prefix if i else "") + c + (bpe.suffix if i == len(word) - 1 else "")
        if s in bpe.vocab:
            if unk is not None:
                pieces.append(unk)
                unk = None
            pieces.append(s)
            continue
        fallback = [f"<0x{b:02X}>" for b in s.encode()]
        if bpe.byte_fallback and all(b in bpe.vocab for b in fallback):
            pieces.extend(fallback)
        elif bpe.unk_token is not None:
            if unk is not None and not bpe.fuse_unk:
                pieces.append(unk)
            unk = bpe.unk_token
    if unk is not None:
        pieces.append(unk)
    return pieces


def _pre_tokenize(tokenizer, text: str) -> list[str]:
    if tokenizer.normalizer is not None:
        text = tokenizer.normalizer.normalize_str(text)
    return [piece for piece, _ in tokenizer.pre_tokenizer.pre_tokenize_str(text)]


def _as_pretoken(tokenizer, word: str) -> str:
    """`word` as one byte-level pre-token: as it is when it already is one (a string `pretokens` returns, e.g.
    "Ġtokenization"), else read as text (" tokenization") and pre-tokenized, which must give one pre-token.
    (A string that is both, e.g. "Ã©", is taken as byte-level: the bytes of "é".) A tokenizer that puts a
    space before a text's first word (add_prefix_space) reads a pre-token such as "," alone as "Ġ,"."""
    text = text_of(word)
    if text is not None:
        data = text.encode()
        if [bytes_of(p) for p in _pre_tokenize(tokenizer, text)] in ([data], [b" " + data]):
            return word
    pieces = _pre_tokenize(tokenizer, word)
    if len(pieces) != 1:
        shown = " · ".join(readable(p) for p in pieces[:6]) + (" · …" if len(pieces) > 6 else "")
        raise ValueError(f"“{show_whitespace(word)}” is {len(pieces)} words to this tokenizer ({shown}): pick or type "
                         "one." if pieces else
                         "There is no word to show: pick a word of the text.")
    return pieces[0]


def merge_steps(tokenizer, word: str) -> list[dict]:
    """Byte-level BPE replayed on one pre-token, one merge at a time, exactly as `tokenizers`' BPE model
    applies them: start from one piece per byte, then again and again join the neighbouring pair with the
    lowest merge rank (the leftmost, when that pair occurs more than once: "aaaa" with the merge "a a" becomes
    "aa aa", not "a aa a"), until no neighbouring pair is a merge. The last step's pieces are the tokens
    `tokenizer.model.tokenize(pre-token)` gives (BPE dropout, used only in training, is not replayed).

    `word` is one pre-token: a byte-level string as `pretokens` returns it ("Ġtokenization"), or text that
    pre-tokenizes to one (" tokenization", the space included, as it stands after another word).
    Returns [{"pieces": [vocabulary strings], "merged": None for the start, else [left, right], "rank": None
    or the merge's 0-based rank}]; a tokenizer with `ignore_merges` that finds the whole word in its
    vocabulary ends with one more step {"pieces": [word], "merged": None, "rank": None, "whole_word": True}.

    ValueError, with a message for the user, when the tokenizer is not byte-level BPE, when `word` is a special
    token ("<s>": a text's tokens read it whole), several pre-tokens or none, or when it is longer than
    MAX_PRETOKEN_BYTES bytes (the view would be a table of hundreds of rows; cutting the word would show merges of a
    word that is not in the text)."""
    bpe = _bpe(tokenizer)
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON can send one): not text the tokenizer can read
        raise ValueError("The word has a broken character in it (half of a UTF-16 surrogate pair): type it "
                         "again.") from None
    if word.strip() in {token.content for token in tokenizer.get_added_tokens_decoder().values()}:
        raise ValueError(f"“{word.strip()}” is a special token: the tokenizer finds it whole in the text, before "
                         "BPE (as the text's tokens show it), so it has no merges to replay.")
    if len(word) > MAX_PRETOKEN_BYTES:  # a pre-token has at least as many bytes as characters: too long either way
        n_bytes = len(word) if text_of(word) is not None else len(word.encode("utf-8"))  # as `_shown` reads it
        raise ValueError(_too_long(_shown(word), n_bytes))
    pretoken = _as_pretoken(tokenizer, word)
    if len(pretoken) > MAX_PRETOKEN_BYTES:
        raise ValueError(_too_long(readable(pretoken), len(pretoken)))
    pieces = _start(bpe, pretoken)
    steps = [{"pieces": list(pieces), "merged": None, "rank": None}]
    if bpe.ignore_merges and pretoken in bpe.vocab:
        if pieces != [pretoken]:
            steps.append({"pieces": [pretoken], "merged": None, "rank": None, "whole_word": True})
        return steps
    while len(pieces) > 1:
        best = min(((bpe.ranks[pair], i) for i, pair in enumerate(zip(pieces, pieces[1:])) if pair in bpe.ranks),
                   default=None)
        if best is None:
            break
        rank, i = best
        left, right = pieces[i], pieces[i + 1]
        pieces[i:i + 2] = [left + right[len(bpe.prefix):]]  # the library strips the prefix off the right part
        steps.append({"pieces": list(pieces), "merged": [left, right], "rank": rank})
    return steps


LIMIT_TEXT = f"merge by merge shows words of up to {MAX_PRETOKEN_BYTES} bytes (it starts from one piece per byte)"


def _quoted(shown: str) -> str:
    return "“" + shown[:24] + ("…" if len(shown) > 24 else "") + "”"


def _too_long(shown: str, n_bytes: int) -> str:
    return f"{_quoted(shown)} is {n_bytes:,} bytes: {LIMIT_TEXT}. Pick a shorter word."


ONLY_SPECIAL = ("There is no word to replay merge by merge: the text the model reads is only special tokens (<s>, "
                "<mask>...), which the tokenizer finds whole, not by merges.")


def left_out(pretokens: list[str]) -> str:
    """The note for the words of a text that merge by merge does not replay (pre-tokens longer than
    MAX_PRETOKEN_BYTES bytes), the longest named: so that a long word the user typed is not silently missing."""
    longest = max(pretokens, key=len)
    more = f" and {len(pretokens) - 1:,} more" if len(pretokens) > 1 else ""
    return f"{_quoted(readable(longest))} ({len(longest):,} bytes){more} left out: {LIMIT_TEXT}."


def _added_spans(tokenizer, text: str) -> list[tuple[int, int]]:
    """Character spans of the added tokens in `text` ("<mask>", with the whitespace lstrip/rstrip takes)."""
    added = tokenizer.get_added_tokens_decoder()
    if not added:
        return []
    encoding = tokenizer.encode(text, add_special_tokens=False)
    spans = []
    for token_id, (start, end) in zip(encoding.ids, encoding.offsets):
        token = added.get(token_id)
        if token is None or end <= start:
            continue
        while token.lstrip and start > 0 and text[start - 1].isspace():
            start -= 1
        while token.rstrip and end < len(text) and text[end].isspace():
            end += 1
        spans.append((start, end))
    return spans


def pretokens(tokenizer, text: str) -> list[str]:
    """The distinct pre-tokens of `text` in the order they first occur, as the ByteLevel pre-tokenizer writes
    them ("Ġcapital"; what `merge_steps` takes; `readable` shows them), for a picker. Added tokens
    ("<mask>") are left out: the tokenizer finds them before pre-tokenizing. At most MAX_PRETOKENS, from the
    first PRETOKEN_TEXT_CHARS characters of a long text. ValueError when the tokenizer is not byte-level BPE."""
    _bpe(tokenizer)
    if len(text) > PRETOKEN_TEXT_CHARS:
        cut = text.rfind(" ", 0, PRETOKEN_TEXT_CHARS)
        text = text[:cut if cut > 0 else PRETOKEN_TEXT_CHARS]
    out, seen, begin = [], set(), 0
    for start, end in [*_added_spans(tokenizer, text), (len(text), len(text))]:
        for piece in _pre_tokenize(tokenizer, text[begin:start]) if start > begin else []:
            if piece not in seen:
                seen.add(piece)
                out.append(piece)
                if len(out) == MAX_PRETOKENS:
                    return out
        begin = max(begin, end)
    return out


def pick_pretoken(tokenizer, pieces: list[str]) -> str | None:
    """The pre-token of `pieces` (`pretokens` of a text) worth replaying first: one with a letter or digit,
    that the tokenizer splits into several tokens, the longest (in bytes, at most MAX_PRETOKEN_BYTES); the first of
    equals. None when there is none."""
    def interest(piece: str) -> tuple:
        text = text_of(piece) or ""  # a pre-token of a text is whole characters
        return (any(c.isalnum() for c in text), len(tokenizer.model.tokenize(piece)) > 1, len(piece))

    return max((p for p in pieces if len(p) <= MAX_PRETOKEN_BYTES), key=interest, default=None)


# ---- views ---------------------------------------------------------------------------------------------------

BPE_CSS = """<style>
.bpe-view{display:flex;flex-direction:column;gap:10px;color:#111827}
.dark .bpe-view{color:#f3f4f6}
.bpe-view p{margin:0}
.bpe-summary{font-size:14px;font-weight:600}
.bpe-cut{font-size:13px;padding:4px 8px;border-left:4px solid #b45309;background:#fffbeb;color:#78350f}
.dark .bpe-cut{background:#451a03;color:#fef3c7;border-left-color:#f59e0b}
.bpe-chips{display:flex;flex-wrap:wrap;gap:4px 3px;align-items:flex-start;max-width:100%;list-style:none;
  margin:0;padding:0}
.bpe-view ol.bpe-chips{margin:0 !important;padding:0 !important}  /* not the page's list indent */
.bpe-view ol.bpe-chips>li{margin-top:0 !important;margin-bottom:0 !important}
.bpe-sr{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.bpe-chip{position:relative}
.bpe-face{display:contents}  /* what a chip shows, and its hover: no box of its own, the chip lays out its parts */
.bpe-chip{display:inline-flex;flex-direction:column;align-items:center;min-width:1.6em;max-width:100%;
  padding:2px 5px;border-radius:5px;border:1px solid #6b7280;margin:0;color:#111827;background:#e0e7ff;
  font-size:15px;line-height:1.3}
.bpe-chip.bpe-b{background:#fef3c7}
.bpe-chip.bpe-word{margin-left:9px}
.bpe-chip.bpe-special{background:#f3f4f6;border-style:dashed;border-color:#4b5563;font-family:monospace;
  font-size:13px}
.bpe-chip .bpe-piece{white-space:pre-wrap;overflow-wrap:anywhere;font-family:monospace}
.bpe-chip .bpe-id,.bpe-chip .bpe-of{font-size:11px;color:#374151;font-variant-numeric:tabular-nums;
  overflow-wrap:anywhere}
.bpe-chip.bpe-new{font-weight:700;border:2px solid #111827}
.dark .bpe-chip{color:#f9fafb;background:#312e81;border-color:#6b7280}
.dark .bpe-chip.bpe-b{background:#713f12}
.dark .bpe-chip.bpe-special{background:#1f2937;border-color:#9ca3af}
.dark .bpe-chip .bpe-id,.dark .bpe-chip .bpe-of{color:#e5e7eb}
.dark .bpe-chip.bpe-new{border-color:#f9fafb}
.bpe-view table.bpe-table{display:table;border-collapse:collapse;width:100%;font-size:14px;border:0;margin:0}
.bpe-view .bpe-table tr,.bpe-view .bpe-table td,.bpe-view .bpe-table th{border:0 !important;
  background:transparent !important;color:inherit}
.bpe-view .bpe-table th{font-weight:600;text-align:left;padding:3px 6px;font-size:13px}
.bpe-view .bpe-table td{padding:3px 6px;vertical-align:top;border-top:1px solid rgba(127,127,127,.35) !important}
.bpe-view .bpe-table td.bpe-step{white-space:nowrap;font-variant-numeric:tabular-nums}
.bpe-view .bpe-table td.bpe-merge{overflow-wrap:anywhere}
.bpe-view code.bpe-code{font-family:monospace;white-space:pre-wrap;color:inherit;background:transparent;padding:0}
.bpe-note{font-size:13px;color:#374151}
.dark .bpe-note{color:#d1d5db}
@media (max-width:600px){.bpe-chip{font-size:13px;padding:1px 3px}.bpe-chip.bpe-word{margin-left:6px}
  .bpe-view table.bpe-table{font-size:12px}.bpe-view .bpe-table td,.bpe-view .bpe-table th{padding:2px 3px}
  /* merge by merge on a phone: smaller pieces, so a step takes two lines rather than four */
  .bpe-table .bpe-chip{font-size:11px;padding:0 2px;min-width:1.1em;border-radius:3px}
  .bpe-table .bpe-chips{gap:2px 1px}}
""" + counts_css("bpe") + "\n</style>"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def _spoken(label: str) -> str:
    """A chip's label as a screen reader should say it: "␣" (read as "open box", or not at all) as "space"."""
    bare = label.lstrip(SPACE_LABEL)
    spaces = len(label) - len(bare)
    return ("space " * spaces + "+ " + bare if bare else "space " * spaces).strip() if spaces else label


def _chip(label: str, tint: int, extra: str = "", classes: str = "", title: str = "", said: str = "") -> str:
    """One token as a list item: what it shows (its label, then `extra`, the id below it) with the hover `title`,
    both hidden from screen readers, and what is said instead: the spoken label, then `said` ("id 23901", "new").
    The title is not on the <li>: there it became the item's accessible name, the vocabulary entry in the
    byte-level alphabet ("vocabulary entry Ã¨me; 38 times ...") said before every token."""
    title_attr = f' title="{html.escape(title)}"' if title else ""
    spoken = _spoken(label) + (f", {said}" if said else "")
    return (f'<li class="bpe-chip {"bpe-b" if tint % 2 else "bpe-a"}{classes}">'
            f'<span class="bpe-face" aria-hidden="true"{title_attr}><span class="bpe-piece">{html.escape(label)}'
            f'</span>{extra}</span><span class="bpe-sr">{html.escape(spoken)}</span></li>')


def _chips(chips: list[str], name: str) -> str:
    return f'<ol class="bpe-chips" aria-label="{html.escape(name)}">{"".join(chips)}</ol>'


def tokens_html(rows: dict, counts=None, removed=(), shipped_vocab_size: int | None = None,
                composed: bool = False) -> str:
    """`token_rows` as chips in reading order: each token's text (a leading space as "␣"; byte pieces of a
    character as "⟨byte 0xF0⟩", with the character they are part of) and its id below; neighbouring tokens in
    alternating tints and separate boxes; a wider gap before the first token of each word; special tokens in
    dashed boxes. A summary line above, a note when the text was cut, had invisible characters `removed` or was
    changed to Unicode's NFC form, `composed` (by `demo.validation.clean_text`, as every tab does), below it what a
    token, a piece and "Ġ"/"␣" are.
    Given `counts` (`demo.training_counts.TrainingCounts`), each token's hover says how often the pretraining
    text holds it; given `shipped_vocab_size` (the shipped model's vocabulary), the note compares it with
    RoBERTa's."""
    tokens = rows["tokens"]
    regular = [t for t in tokens if not t["special"]]
    specials = list(dict.fromkeys(t["token"] for t in tokens if t["special"]))
    chips, tint = [], 0
    for t in tokens:
        classes = (" bpe-word" if t["word_start"] else "") + (" bpe-special" if t["special"] else "")
        extra = f'<span class="bpe-id">{t["id"]}</span>'
        if t["special"]:
            chips.append(_chip(t["token"], 0, extra, classes, f'special token {t["token"]}',
                               f'special token, id {t["id"]}'))
            continue
        part = ""
        if is_partial(t["token"]) and t["text"]:
            part = f' of “{show_whitespace(t["text"])}”'
            extra += f'<span class="bpe-of">of “{html.escape(show_whitespace(t["text"]))}”</span>'
        title = f'vocabulary entry {t["token"]}' + (f'; {counts.sentence(t["id"])}' if counts is not None else "")
        chips.append(_chip(readable(t["token"]), tint, extra, classes, title,
                           f'{part.strip()}, id {t["id"]}'.lstrip(", ")))
        tint += 1
    if not regular:  # special tokens alone ("<s></s>"): no ratio, "0.00 per character" said nothing
        per = ""
    elif rows["read_words"] > 1 or rows["read_characters"] <= 1:
        per = f' ({rows["tokens_per_word"]:.2f} per word)' if rows["read_words"] else ""
    else:  # one "word": a language written without spaces, or one long word
        per = f' ({len(regular) / rows["read_characters"]:.2f} per character)'
    named = ", ".join(specials)
    if rows["truncated"]:
        read = (f'First {rows["read_characters"]:,} of {rows["characters"]:,} characters '
                f'({rows["read_words"]:,} of {_plural(rows["words"], "word")})')
    else:
        read = (f'{_plural(rows["characters"], "character")}, {_plural(rows["bytes"], "byte")}, '
                f'{_plural(rows["words"], "word")} (split at spaces)')
    summary = (f'{read} → {_plural(len(regular), "token")}{per}'
               + (f', plus {_plural(len(tokens) - len(regular), "special token")} ({named})' if specials else ""))
    cut = ""
    if rows["truncated"]:
        cut = (f'<p class="bpe-cut">Cut: the model reads at most {rows["max_length"]:,} tokens, special tokens '
               f'included, so it reads only the first {rows["read_characters"]:,} of the '
               f'{rows["characters"]:,} characters ({_plural(rows["read_words"], "word")}); the counts after '
               '“→” are for that part. The rest is not shown.</p>')
    if removed:
        codes = ", ".join(f"U+{ord(c):04X}" for c in dict.fromkeys(removed))
        cut += (f'<p class="bpe-cut">Removed before tokenizing, as in every tab: '
                f'{_plural(len(removed), "invisible character")} ({codes}), which would change the tokens, and so '
                "the model's answers, without showing.</p>")
    if composed:
        cut += ('<p class="bpe-cut">Changed to Unicode\'s usual form (NFC), which most text uses, before '
                "tokenizing, as in every tab: a letter and a separate combining accent (e and ◌́) become the one "
                "character they make (é), and a few other characters are written as that form writes them (the "
                "ohm sign, U+2126, as the Greek letter Ω), so a word gets the tokens it has as usually written.</p>")
    note = ("Each box is one token: the text it stands for, and below it its id in the vocabulary. A wider gap "
            "marks the first token of a word. A word the vocabulary has no single token for is cut into several "
            "tokens, which this app calls the word's pieces (elsewhere: subwords). "
            f"“{SPACE_LABEL}” is a space that belongs to the token: the "
            "vocabulary writes it “Ġ”, because byte-level BPE first writes every byte of the text as one "
            "printable character (a space as “Ġ”, a newline as “Ċ”). A word after a space is usually one token "
            "with its space, and a different token from the same word at the start of the text. Every one of "
            "the 256 bytes is a token, so any text can be written without <unk>: a rare character is left as "
            "its bytes (“⟨byte 0xF0⟩”, in hexadecimal; a character takes 1 to 4 bytes, and an emoji built from "
            "several characters, such as a family, a flag or a skin tone, takes more). An invisible character "
            "that is kept (the zero-width joiner of an emoji) shows as its code (“⟨U+200D⟩”). Dashed boxes are special "
            "tokens the model reads around the text (<s> starts it, </s> ends it).")
    if shipped_vocab_size is not None:
        note += (f" RoBERTa reuses GPT-2's tokenizer ({GPT2_MERGES:,} merges, {GPT2_VOCAB_SIZE:,} tokens; "
                 f"roberta-base has {ROBERTA_VOCAB_SIZE:,}: its special tokens and 3 unused fillers); the "
                 f"shipped model's was trained the same way on its own text, with {shipped_vocab_size:,} tokens. "
                 f"Choose {COMPARE_WITH} in the model box to compare the cuts.")
    if counts is not None:
        note += (" Hover a token, or open “in full”, for how often the text the model was pretrained on holds it: "
                 "a word that text held rarely comes in pieces, and the model knows it less.")
    in_full = ""
    if counts is not None and regular:  # each token once, in reading order
        unique = {t["id"]: t["token"] for t in regular}
        in_full = counts_details([counts.sentence(i, readable(token)) for i, token in unique.items()], "bpe")
    return (f'{BPE_CSS}<div class="bpe-view"><p class="bpe-summary">{html.escape(summary)}</p>{cut}'
            f'{_chips(chips, _plural(len(tokens), "token"))}{in_full}<p class="bpe-note">{html.escape(note)}</p></div>')


def _shown(word: str) -> str:
    """A word as the user reads it: a byte-level pre-token decoded, else the text with visible whitespace (the
    choice `_as_pretoken` makes: "café" is text, its "é" alone is not a whole character as a byte)."""
    return readable(word) if text_of(word) is not None else show_whitespace(word)


def _replayed(word: str, steps: list[dict]) -> str:
    """The word merge by merge replays (`merge_steps`), as the user reads it: its starting pieces read back as
    text. That is not always `word` as `_shown` reads it: "ĠĠcat" read as bytes is two words (two spaces, then
    "cat"), so it is replayed as the text "ĠĠcat", the letters, and named so. `_shown(word)` when there are no
    steps."""
    pretoken = "".join(steps[0]["pieces"]) if steps else ""
    return readable(pretoken) if pretoken and bytes_of(pretoken) is not None else _shown(word)


def _merge_applied(left: str, right: str, new: str, rank: int) -> str:
    """A merge step's "merge applied" cell, as HTML: what it shows ("␣ + b → ␣b · rank #20", hidden from screen
    readers, which say "␣" as "open box" or nothing) and what is said instead, the pieces as the chips beside it
    say them ("space and b merge into space + b, rank 20")."""
    shown = f"{left} + {right} → {new} · rank #{rank:,}"
    said = f"{_spoken(left)} and {_spoken(right)} merge into {_spoken(new)}, rank {rank:,}"
    return f'<span aria-hidden="true">{html.escape(shown)}</span><span class="bpe-sr">{html.escape(said)}</span>'


def merges_html(word: str, steps: list[dict], tokenizer=None) -> str:
    """`merge_steps` as a table: the step number, the pieces after it (the new piece in bold with a heavier
    border), the merge applied ("t + ion → tion") and its rank; a note on what the ranks mean, and with the
    `tokenizer`, how many merges it learned and what its vocabulary is made of."""
    rows, before = [], None
    for n, step in enumerate(steps):
        pieces = step["pieces"]
        new = None
        if before is not None and step["merged"] is not None:
            new = next((i for i, (a, b) in enumerate(zip(pieces, before)) if a != b), len(pieces) - 1)
        chips = _chips([_chip(readable(p), i, "", " bpe-new" if i == new else "", f"vocabulary entry {p}",
                              "new" if i == new else "") for i, p in enumerate(pieces)],
                       f"step {n}: {_plural(len(pieces), 'piece')}")
        if step.get("whole_word"):  # `what`: the cell's HTML
            what = "the whole word is in the vocabulary: this tokenizer takes it as it is, without merges"
        elif step["merged"] is None:
            what = f'start: one piece per byte ({_plural(len(pieces), "piece")})'
        else:
            what = _merge_applied(*(readable(p) for p in (*step["merged"], pieces[new])), step["rank"])
        rows.append(f'<tr><td class="bpe-step">{n}</td><td>{chips}</td>'
                    f'<td class="bpe-merge"><code class="bpe-code">{what}</code></td></tr>')
        before = pieces
    last = steps[-1]["pieces"] if steps else []
    result = " · ".join(readable(p) for p in last)
    shown = _replayed(word, steps)
    merges = sum(step["merged"] is not None for step in steps)
    if len(last) == 1:
        done = (f"After {_plural(merges, 'merge')} the whole word is one token: {result}." if merges else
                f"“{shown}” is one token as it is: {result}.")
    else:
        done = (f"After {_plural(merges, 'merge')} no two neighbouring pieces form a learned merge" if merges else
                "No two neighbouring pieces form a learned merge") + \
            f": “{shown}” is {_plural(len(last), 'token')}: {result}."
    note = ("How the tokenizer got there: while it was trained, it learned its merges one at a time, each "
            "time joining the pair of neighbouring pieces that was most frequent in its training text, and "
            "numbered them in that order. A lower rank means a merge learned earlier, a more frequent pair "
            "(rank #0 came first). To read a word it starts from its bytes and, again and again, applies the "
            "merge with the lowest rank among all neighbouring pairs (the leftmost, if that pair occurs twice), "
            "until none applies. The new piece of each step is in bold.")
    if tokenizer is not None:
        merges, size = len(_bpe(tokenizer).ranks), tokenizer.get_vocab_size()
        specials = len(tokenizer.get_added_tokens_decoder())
        note += (f" This tokenizer learned {merges:,} merges: its vocabulary of {size:,} is the 256 bytes, "
                 f"{specials} special tokens and one token per merge.") if 256 + specials + merges == size else (
                 f" This tokenizer learned {merges:,} merges; its vocabulary has {size:,} tokens.")
    return (f'{BPE_CSS}<div class="bpe-view"><p class="bpe-summary">How “{html.escape(shown)}” is cut into '
            f'tokens, merge by merge</p><table class="bpe-table"><tr><th scope="col">step</th>'
            f'<th scope="col">pieces</th><th scope="col">merge applied</th></tr>{"".join(rows)}</table>'
            f'<p class="bpe-done">{html.escape(done)}</p><p class="bpe-note">{html.escape(note)}</p></div>')
