"""The Embeddings tab's word vectors: what the model learned in its word embeddings, read without running it.

Word embeddings, (V, H): one row per token, the model's input and, tied, its output layer (the MLM head scores a
token by its row). `nearest_words` ranks every row by cosine similarity to a word's vector, `analogy` tries "a is
to b as c is to ?" (3CosAdd). The tab's other two views have their own modules: `demo.word_map` projects a few
words to 2-D, `demo.position_view` compares the position embeddings.

A word is looked up as it appears mid-sentence (`look_up_word`): " " + word, the token(s) the tokenizer makes of
it without <s> and </s> (a leading "␣" or "Ġ", the Tokens tab's and the vocabulary's sign of that space, read as
it: "Ġ" where the word with it is a vocabulary entry, `typed_word`); a word in several pieces stands for the mean
of its pieces' rows, and a word cut into bytes of characters is refused.
Nothing here assumes the shipped model's sizes: roberta-base's 50,265 x 768 table works the same, one
matrix-vector product per query with the rows' norms computed once per table (`_row_norms`).
"""
from __future__ import annotations

import html
import threading
import weakref
from collections import OrderedDict

import torch

from roberta.tokenizer import SPECIAL_TOKENS

from .byte_level import is_partial
from .formatting import VISIBLE_RE, bar, pct, readable, typed_word, word_labels
from .training_counts import counts_css, counts_details, seen_cell
from .validation import one_word

MAX_PIECES = 5  # a word in more pieces is mostly a guess of the tokenizer's, its mean says little
MAX_K = 100

# --- the vocabulary, read once per tokenizer -------------------------------------------------------------

class _Vocab:
    """Per tokenizer: every token decoded on its own, which are special, which are "word-like" (a word's
    mid-sentence form: a leading space and a letter or digit), and the ids of each word form ("monday" -> the ids
    of " Monday", "Monday", " monday", ...), so a query's case and space variants are found without a scan."""

    def __init__(self, tokenizer):
        n = tokenizer.get_vocab_size()
        self.strings: list[str] = tokenizer.decode_batch([[i] for i in range(n)], skip_special_tokens=False)
        added = getattr(tokenizer, "get_added_tokens_decoder", dict)()
        self.special = {i for i, token in added.items() if getattr(token, "special", False)}
        self.special |= {tokenizer.token_to_id(t) for t in SPECIAL_TOKENS} - {None}
        self.word_like = torch.tensor([s[:1] == " " and any(c.isalnum() for c in s) and i not in self.special
                                       for i, s in enumerate(self.strings)], dtype=torch.bool)  # (n,)
        self.forms: dict[str, list[int]] = {}
        for i, s in enumerate(self.strings):
            if i not in self.special:
                self.forms.setdefault(_form(s), []).append(i)

    def allowed(self, rows: int, words_only: bool) -> torch.Tensor:
        """(rows,) bool: the tokens a neighbour list may show (rows the tokenizer lacks never are)."""
        keep = torch.zeros(rows, dtype=torch.bool)  # (rows,)
        n = min(rows, len(self.strings))
        keep[:n] = self.word_like[:n] if words_only else True
        keep[[i for i in self.special if i < rows]] = False
        return keep


_VOCABS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _vocab(tokenizer) -> _Vocab:
    vocab = _VOCABS.get(tokenizer)
    if vocab is None or len(vocab.strings) != tokenizer.get_vocab_size():
        vocab = _VOCABS[tokenizer] = _Vocab(tokenizer)  # ~20 ms for 32k tokens
    return vocab


def _form(text: str) -> str:
    """A word's form without case and surrounding space: " Monday", "monday" and "MONDAY" are one."""
    return text.strip().casefold()


# --- the rows' norms, computed once per table ------------------------------------------------------------

# id(table) -> (a weak reference to it, its version counter then, its row norms); tensors cannot be keys of a
# WeakKeyDictionary (their == is elementwise), so the entry checks that its table is still the same one
_NORMS: "OrderedDict[int, tuple]" = OrderedDict()
_NORMS_LOCK = threading.Lock()
_NORMS_KEPT = 4  # tables remembered (the app holds two or three models); a (V,) vector each


def plain_table(embeddings: torch.Tensor) -> torch.Tensor:
    """The table as plain floats, without autograd (a Parameter may be passed as it is)."""
    table = embeddings.detach()
    return table if table.dtype in (torch.float32, torch.float64) else table.float()


def _row_norms(embeddings: torch.Tensor) -> torch.Tensor:
    """(V,) the norm of every row, computed once per table and again after an in-place change (its version
    counter moves). A change made through `.data` moves no counter (the app never writes to a table): a test
    that makes one clears `_NORMS` itself."""
    with _NORMS_LOCK:
        hit = _NORMS.get(id(embeddings))
        if hit is not None and hit[0]() is embeddings and hit[1] == embeddings._version:
            _NORMS.move_to_end(id(embeddings))
            return hit[2]
    norms = plain_table(embeddings).norm(dim=-1)  # (V,)
    with _NORMS_LOCK:
        _NORMS[id(embeddings)] = (weakref.ref(embeddings), embeddings._version, norms)
        _NORMS.move_to_end(id(embeddings))
        while len(_NORMS) > _NORMS_KEPT:
            _NORMS.popitem(last=False)
    return norms


def _cosines(embeddings: torch.Tensor, vector: torch.Tensor) -> torch.Tensor:
    """(V,) cosine similarity of `vector` (H,) with every row: one matrix-vector product."""
    table = plain_table(embeddings)
    unit = vector.to(table) / vector.norm().clamp_min(1e-12)  # (H,)
    return (table @ unit / _row_norms(embeddings).clamp_min(1e-12)).float().cpu()  # (V,)


# --- words -----------------------------------------------------------------------------------------------

def look_up_word(embeddings: torch.Tensor, tokenizer, word: str, name: str = "The word"
          ) -> tuple[str, torch.Tensor, list[str], list[int]]:
    """`word` as read (without the space around it, a leading "␣" or "Ġ" read as one: the Tokens tab's "␣cat" and
    the vocabulary's "Ġcat" are "cat", Maltese "Ġenerali" is as typed: `typed_word`); its (H,) vector as it
    appears mid-sentence (" " + word): its token's row, or the mean of its pieces' rows; the pieces as the view
    names them, a leading space shown as "␣" (["␣Monday"], or ["␣antid", "is", "establish", "ment"]); and their
    ids. ValueError with a plain message for an empty word, one longer than 40 characters, in more than
    MAX_PIECES pieces, holding a special token, or cut into bytes of characters; `name` starts the messages
    ("Word c is empty...")."""
    shown = typed_word(word, tokenizer)
    if not VISIBLE_RE.search(shown):  # nothing, or only characters that show nothing (zero-width spaces...)
        raise ValueError(f"{name} is empty: type a word.")
    try:
        shown.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON can send one): not text the tokenizer can read
        raise ValueError(f"{name} has a broken character in it (half of a UTF-16 surrogate pair): type it "
                         "again.") from None
    one_word(shown)
    encoding = tokenizer.encode(" " + shown, add_special_tokens=False)
    ids = list(getattr(encoding, "ids", encoding))
    vocab = _vocab(tokenizer)
    special = next((i for i in ids if i in vocab.special), None)
    if special is not None:
        token = tokenizer.decode([special], skip_special_tokens=False).strip()
        what = f"is the special token {token}" if shown == token else f"holds the special token {token}"
        raise ValueError(f"“{shown}” {what}, not a word the model has a row for.")
    if len(ids) > MAX_PIECES:
        raise ValueError(f"“{shown}” is {len(ids)} pieces to this tokenizer; words of up to {MAX_PIECES} pieces "
                         "are shown (the mean of more says little).")
    if not ids or max(ids) >= len(embeddings):
        raise ValueError(f"The model has no embedding for “{shown}”.")
    tokens = [tokenizer.id_to_token(i) for i in ids]
    pieces = [readable(t) for t in tokens]
    if any(map(is_partial, tokens)):
        # an emoji, or a letter the vocabulary barely has: bytes, whose rows are shared by every such character
        raise ValueError(f"“{shown}” has characters this tokenizer cuts into bytes ({' '.join(pieces)}): a byte's "
                         "row is shared by every character that holds the byte, so the mean says nothing about "
                         "the word.")
    vector = embeddings.detach()[ids].float().mean(dim=0)  # (H,): only these rows converted, whatever the dtype
    return shown, vector, pieces, ids


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValueError(f"Ask for 1 to {MAX_K} neighbours.")
    return k


def _top(sims: torch.Tensor, allowed: torch.Tensor, vocab: _Vocab, k: int, one_per_word: bool,
         tokenizer) -> list[dict]:
    """The k allowed rows most similar, best first, each {"token" (id), "token_str" (decoded), "label" (the
    vocabulary entry as `demo.formatting.readable` shows it: "␣Tuesday", "⟨byte 0xF0⟩"), "similarity"};
    `one_per_word` keeps only the best of each word form (" Tuesday" and " tuesday" are one word to a reader)."""
    scores = sims.masked_fill(~allowed, float("-inf"))  # (V,)
    available = int(allowed.sum())
    out, seen = [], set()
    for want in (min(available, 4 * k + 16), available):  # usually the first, short list is enough
        values, picks = scores.topk(want)  # (want,)
        out, seen = [], set()
        for value, pick in zip(values.tolist(), picks.tolist()):
            form = _form(vocab.strings[pick]) if pick < len(vocab.strings) else str(pick)
            if one_per_word and form in seen:
                continue
            seen.add(form)
            out.append({"token": pick, "token_str": vocab.strings[pick],
                        "label": readable(tokenizer.id_to_token(pick) or vocab.strings[pick]), "similarity": value})
            if len(out) == k:
                return out
    return out


def _excluded(vocab: _Vocab, words: list[str], ids: list[int]) -> list[int]:
    """The query's own tokens and every case and space variant of each of its words (of each word of a query of
    several: " A" and " B" for "a b")."""
    parts = {part for w in words for part in (w, *w.split())}
    return sorted(set(ids).union(*(vocab.forms.get(_form(part), []) for part in parts)))


def _allowed(vocab: _Vocab, rows: int, words_only: bool, words: list[str], ids: list[int]) -> torch.Tensor:
    allowed = vocab.allowed(rows, words_only)  # (V,)
    allowed[[i for i in _excluded(vocab, words, ids) if i < rows]] = False
    return allowed


def _baseline(sims: torch.Tensor, vocab: _Vocab) -> float:
    """How alike a token picked at random is to the query: the mean of `sims` (V,) over the ordinary tokens, and so
    the query's unit vector times the mean of the rows' unit vectors, the direction they share. A small model's
    rows share one large direction (the shipped model's mean unit row is 0.94 long), so for nearly every word this
    is far above 0 (0.88 for "Monday"; over 0.5 for 99.8% of the shipped vocabulary), but a dozen of the commonest
    tokens point away from it and score below 0 ("the" -0.32, "and" -0.40, "," -0.46): a neighbour's score means
    what it rises above it, whatever its sign (`baseline_said`)."""
    ordinary = vocab.allowed(len(sims), words_only=False)  # (V,)
    return float(sims[ordinary].mean()) if bool(ordinary.any()) else 0.0


def nearest_words(embeddings: torch.Tensor, tokenizer, word: str, k: int = 10, words_only: bool = True) -> dict:
    """The k tokens whose rows are most like `word`'s vector (`look_up_word`) by cosine similarity, best first.
    Never the word's own tokens, its case and space variants (" monday", "Monday" for " Monday") or special
    tokens. `words_only` keeps only word-like tokens, a leading space and a letter or digit (" Tuesday",
    " 7", not "day" or ","), one per word (the best of " Tuesday" and " tuesday"); without it every token
    competes. Returns {"word", "pieces" (readable, see `look_up_word`), "words_only", "neighbours": [{"token"
    (id), "token_str" (decoded), "label" (as `demo.formatting.readable` shows it), "similarity"}], "baseline" (the
    query's mean similarity to every ordinary token, `_baseline`)}."""
    k = _check_k(k)
    word, vector, pieces, ids = look_up_word(embeddings, tokenizer, word)
    vocab = _vocab(tokenizer)
    allowed = _allowed(vocab, len(embeddings), words_only, [word], ids)  # (V,)
    sims = _cosines(embeddings, vector)  # (V,)
    return {"word": word, "pieces": pieces, "words_only": words_only,
            "neighbours": _top(sims, allowed, vocab, k, words_only, tokenizer), "baseline": _baseline(sims, vocab)}


def analogy(embeddings: torch.Tensor, tokenizer, a: str, b: str, c: str, k: int = 10,
            words_only: bool = True) -> dict:
    """"a is to b as c is to ?" by 3CosAdd (Mikolov et al., 2013): the words nearest, by cosine, to
    b̂ − â + ĉ (each word's vector at unit length), never a, b or c themselves nor their variants.
    Returns `nearest_words`' dict with "word" the sum as text ("France − Paris + Berlin"), "pieces" all three
    words' pieces, "query": [a, b, c], "query_pieces": each word's pieces and "nearest_unruled": the nearest
    word were a, b and c allowed (usually one of them, as Linzen 2016 found), or None."""
    k = _check_k(k)
    looked_up = []
    for name, w in zip("abc", [a, b, c]):
        try:
            looked_up.append(look_up_word(embeddings, tokenizer, w, f"Word {name}"))
        except ValueError as err:
            message = str(err)
            raise ValueError(message if message.startswith("Word ") else f"Word {name}: {message}") from None
    (sa, va, pa, ia), (sb, vb, pb, ib), (sc, vc, pc, ic) = looked_up
    shown = [sa, sb, sc]
    if len({_form(w) for w in shown}) < 3:
        raise ValueError("Give three different words: a is to b as c is to ?")
    unit = [v / v.norm().clamp_min(1e-12) for v in (va, vb, vc)]  # 3 x (H,)
    target = unit[1] - unit[0] + unit[2]  # (H,)
    vocab = _vocab(tokenizer)
    allowed = _allowed(vocab, len(embeddings), words_only, shown, ia + ib + ic)  # (V,)
    sims = _cosines(embeddings, target)  # (V,)
    # the nearest word were the three words allowed: usually one of them, which is why 3CosAdd excludes them
    unruled = _top(sims, vocab.allowed(len(embeddings), words_only), vocab, 1, words_only, tokenizer)
    return {"word": f"{shown[1]} − {shown[0]} + {shown[2]}", "pieces": pa + pb + pc, "words_only": words_only,
            "neighbours": _top(sims, allowed, vocab, k, words_only, tokenizer), "baseline": _baseline(sims, vocab),
            "query": shown, "query_pieces": [pa, pb, pc],
            "nearest_unruled": unruled[0]["token_str"] if unruled else None}


def score_analogies(embeddings: torch.Tensor, tokenizer, questions, top_k: int = 5) -> dict:
    """`analogy` asked of every question, (category, a, b, c, expected) each (`demo.examples.ANALOGY_PROBE`): an
    answer counts when its word (stripped, case-insensitive) is the expected one, first (top-1) or among the
    first `top_k`; a question whose words cannot be looked up (too many pieces) is a miss, with its reason.
    Returns {"questions", "top1", "top{k}" (shares), "categories": {name: {"questions", "top1", "top{k}"}}
    (counts), "answers": [{category, a, b, c, expected, "answers": the top-k words, "rank": of the expected
    word or None, "error" when not asked}]}."""
    answers, by_category = [], {}
    for category, a, b, c, expected in questions:
        try:
            words, error = [n["token_str"].strip() for n in analogy(embeddings, tokenizer, a, b, c, top_k)[
                "neighbours"]], None
        except ValueError as err:
            words, error = [], str(err)
        folded = [w.casefold() for w in words]
        rank = folded.index(expected.casefold()) + 1 if expected.casefold() in folded else None
        counts = by_category.setdefault(category, {"questions": 0, "top1": 0, f"top{top_k}": 0})
        counts["questions"] += 1
        counts["top1"] += rank == 1
        counts[f"top{top_k}"] += rank is not None
        answers.append({"category": category, "a": a, "b": b, "c": c, "expected": expected, "answers": words,
                        "rank": rank, **({"error": error} if error else {})})
    n = max(len(answers), 1)
    return {"questions": len(answers), "top1": sum(c["top1"] for c in by_category.values()) / n,
            f"top{top_k}": sum(c[f"top{top_k}"] for c in by_category.values()) / n, "categories": by_category,
            "answers": answers}


def probe_markdown(result: dict, who: str = "the model's embeddings", top_k: int = 5) -> str:
    """`score_analogies`' result in a sentence or two, with each category's count."""
    n = result["questions"]
    parts = ", ".join(f"{name} {c['top1']}/{c['questions']}" for name, c in result["categories"].items())
    return (f"**How often is the analogy right?** Of {n} test questions (Paris : France :: Berlin : ?, and "
            f"the like), {who} give the expected word first for {pct(result['top1'])} "
            f"({round(result['top1'] * n)} of {n}) and among the first {top_k} for {pct(result[f'top{top_k}'])}. "
            f"Right first, by kind: {parts}. Measured when the app started.")


# --- the table view --------------------------------------------------------------------------------------

EMBEDDING_CSS = """<style>
.ev-view{display:flex;flex-direction:column;gap:6px;container-type:inline-size}
.ev-view h3{margin:0;font-size:14px}
.ev-view p{margin:0}
.ev-view table.ev-table{display:table;border-collapse:collapse;width:100%;font-size:14px;border:0;margin:0}
.ev-view tr,.ev-view td,.ev-view th{border:0 !important;background:transparent !important}
.ev-view th{font-weight:600;text-align:left;padding:2px 6px;font-size:13px}
.ev-view td,.ev-view th.ev-word{padding:2px 6px;vertical-align:middle}
.ev-view th.ev-word{font-weight:400;font-size:14px;white-space:nowrap;max-width:14em;overflow:hidden;
  text-overflow:ellipsis}
.ev-view td.ev-rank{text-align:right;width:2.5em;font-variant-numeric:tabular-nums}
.ev-view td.ev-score{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.ev-view td.ev-track{width:50%}
.ev-view .ev-seen{font-size:12px;opacity:.8;text-align:left;white-space:nowrap;font-variant-numeric:tabular-nums}
.ev-view .ev-kind{white-space:nowrap}
.ev-bar{display:block;height:12px;border-radius:3px;background:#6366f1;min-width:2px}
.ev-bar.ev-none{background:transparent;border-left:2px solid #6366f1}
.dark .ev-bar{background:#818cf8}.dark .ev-bar.ev-none{background:transparent;border-color:#818cf8}
/* forced colours (Windows High Contrast) drop backgrounds: the bar in the text's colour, or it vanished (the
   border of a bar of nothing stays, in a system colour) */
@media (forced-colors:active){.ev-bar:not(.ev-none){forced-color-adjust:none;background:CanvasText}}
.ev-pieces{font-size:13px}
.ev-note{font-size:12px;opacity:.75}
/* a narrow box: each neighbour's count on a line of its own under it (five columns left the bars 2 px wide). The
   box's width, not the screen's: Nearest words and Analogy sit side by side from about 720 px, each 340-560 px
   wide up to 1180 px, where the wide table ran into the next column */
@container (max-width:600px){
  .ev-view table:has(td.ev-seen),.ev-view table:has(td.ev-seen) tbody{display:block;padding:0}
  .ev-view table:has(td.ev-seen),.ev-view table:has(td.ev-seen) :is(tbody,tr,th,td){margin:0 !important}
  .ev-view table:has(td.ev-seen) tr{display:grid;grid-template-columns:2.6em minmax(0,1fr) 3.6em 35%;
    align-items:center;padding:0 !important}
  .ev-view table:has(td.ev-seen) :is(th,td){padding:2px 4px !important}
  .ev-view table:has(td.ev-seen) td.ev-track{width:auto}
  .ev-view table:has(td.ev-seen) th[colspan]{grid-column:span 2}
  .ev-view table:has(td.ev-seen) th.ev-seen{display:none}
  .ev-view table:has(td.ev-seen) td.ev-seen{grid-column:1/-1;white-space:normal;
    padding:0 4px 4px calc(2.6em + 4px) !important}
  .ev-view td.ev-seen::before{content:'in the pretraining text: '}.ev-view td.ev-track{width:30%}
  .ev-view table.ev-table,.ev-view th,.ev-view td{font-size:12px}.ev-view td,.ev-view th{padding:2px 3px}}
""" + counts_css("ev") + "\n</style>"


def _pieces_line(word: str, pieces: list[str]) -> str:
    """"“Monday” is one token, ␣Monday" or "“antidisestablishment” is in 4 pieces: ␣antid is ..., their
    mean"."""
    word, listed = html.escape(word), html.escape(" ".join(pieces))
    if len(pieces) == 1:
        return f"“{word}” is one token, <code>{listed}</code>"
    return f"“{word}” is in {len(pieces)} pieces, <code>{listed}</code>: their mean stands for it"


def neighbours_html(result: dict, title: str, counts=None) -> str:
    """`nearest_words` or `analogy` as a person reads it: a table of rank, word and cosine similarity (the number
    always, and a bar from the baseline, the query's mean similarity to every token, to 1: in a small model
    every token scores high, so the bars show what rises above that), how the query was split into tokens, and a note
    on what the similarity means. Given `counts` (`demo.training_counts.TrainingCounts` of the tokenizer's
    vocabulary), a last column says how often the pretraining text held each neighbour (every count on hover)."""
    rows = []
    neighbours = result["neighbours"]
    baseline = float(result.get("baseline", 0.0))
    words_only = result.get("words_only", True)
    labels = (word_labels([n["token_str"] for n in neighbours]) if words_only else
              [n.get("label", n["token_str"]) for n in neighbours])  # every token: "␣" marks a leading space
    for rank, (n, word) in enumerate(zip(neighbours, labels), 1):
        sim = float(n["similarity"])
        above = (sim - baseline) / max(1.0 - baseline, 1e-6)  # the share of the way from the baseline to 1
        track = bar(above, "ev-bar" + (" ev-none" if above <= 0 else ""))
        seen = seen_cell(counts, int(n["token"]), "ev", word) if counts is not None else ""
        rows.append(f'<tr><td class="ev-rank">{rank}</td><th scope="row" class="ev-word" '
                    f'title="{html.escape(repr(n["token_str"]))}">{html.escape(word)}</th>'
                    f'<td class="ev-score">{sim:.3f}</td><td class="ev-track">{track}</td>{seen}</tr>')
    if not rows:
        rows.append(f'<tr><td colspan="{4 if counts is None else 5}">No token is left to compare once the query’s own '
                    "tokens and special tokens are set aside.</td></tr>")
    if "query_pieces" in result:
        a, b, c = (html.escape(w) for w in result["query"])
        lines = [f"“{a}” is to “{b}” as “{c}” is to …? The words nearest to {b} − {a} + {c} (each word's "
                 "vector at length 1), never the three words themselves" + _unruled_said(result) + "."]
        lines += [_pieces_line(w, p) for w, p in zip(result["query"], result["query_pieces"]) if len(p) > 1]
    else:
        lines = [_pieces_line(result["word"], result["pieces"])]
    which = ("Only tokens that begin a word are listed (a space, then a letter or digit), the best of each "
             "word's case variants." if words_only else
             "Every token competes, pieces of words and punctuation included (␣ marks a token's leading space).")
    if "query_pieces" in result:  # an analogy's table reads as the nearest words': one explanation, under those
        note = ("Cosine similarity, as under Nearest words (see its note for how to read it"
                + (" and the “In the pretraining text” column" if counts is not None else "")
                + f"): here a token picked at random scores {baseline:.2f} on average, where the bars start."
                + ("" if words_only else " " + which))
    else:
        note = nearest_note(baseline, which, counts is not None, result["word"])
    pieces = "".join(f'<p class="ev-pieces">{line}</p>' for line in lines)
    return (f'{EMBEDDING_CSS}<div class="ev-view"><h3>{html.escape(title)}</h3>{pieces}'
            f'<table class="ev-table"><tr><th scope="col">rank</th><th scope="col">word</th>'
            f'<th scope="col" colspan="2">cosine similarity</th>'
            + ('<th scope="col" class="ev-seen">in the pretraining text</th>' if counts is not None else "")
            + f'</tr>{"".join(rows)}</table>'
            + (counts_details([counts.sentence(int(n["token"]), word) for n, word in zip(neighbours, labels)], "ev")
               if counts is not None and neighbours else "")
            + f'<p class="ev-note">{html.escape(note)}</p></div>')


LEANING = 0.2  # a baseline at least this far from 0: the word leans along (or away from) the rows' shared direction
ALONG = 0.5  # a baseline from here up: the word points along that direction (cosine with it over 0.5)


def baseline_said(baseline: float, word: str) -> str:
    """The baseline (`_baseline`) in words, true whatever its sign: it is the word's unit vector times the mean of
    the rows' unit vectors, so it is far above 0 when the word points along the direction the rows share (as
    nearly every word of the shipped model does: "Monday" 0.88), below 0 when it points away from it (as a few of
    the commonest words do there: "the" -0.32, and 99.8% of the tokens score below 0 with it), and near 0 when it
    stands at about right angles to it (the shipped model's mean unit row is 0.94 long: |baseline| < LEANING is an
    angle of 78 to 102 degrees). "Share one large common direction" alone, said of "the", read as if "the" shared
    it too, beside its -0.32."""
    score, word = f"{baseline:.2f}", f"“{word}”"
    if baseline >= LEANING:
        where = (f"most embeddings of a small model share one large common direction, and {word} "
                 + ("points along it" if baseline >= ALONG else "leans toward it"))
    elif baseline <= -LEANING:
        where = (f"most embeddings of a small model share one large common direction, and {word} points away from "
                 "it (very common words can), so most tokens score below 0 with it")
    else:
        where = (f"{word} stands at about right angles to the large common direction that most embeddings of a small "
                 "model share")
    return (f"Here a token picked at random scores {score} on average: {where}. Read the order and how far a score "
            f"rises above {score}, not the number itself; the bars start at {score}.")


def nearest_note(baseline: float, which: str, counted: bool, word: str) -> str:
    """What the nearest words' similarities mean and how to read them against `baseline` (`baseline_said`, of the
    query `word`); `which` says which tokens compete; `counted`: the table has the pretraining-text column."""
    note = ("Cosine similarity of the learned input embeddings (1 = the same direction). "
            + baseline_said(baseline, word) + " The same table is the output layer (the model scores a predicted "
            "word by its row), and training places tokens that appear in similar contexts close together, which is not "
            "the same as meaning the same: opposites such as good and bad fit the same sentences, so they are "
            "often each other's neighbours. " + which)
    if counted:
        note += (" “In the pretraining text”: how often the text the model was pretrained on holds the token (each "
                 "document counted once), and in which kind of text it is commoner, per token of each (hover, or open "
                 "“in full”, for every count). A token it held a few dozen times has an embedding trained on a few "
                 "dozen sentences: odd neighbours are often such rare tokens.")
    return note


def _unruled_said(result: dict) -> str:
    """" (without that rule the nearest word would be “king”, b itself: the rule flatters analogy scores; Linzen
    2016)" when the nearest word of an analogy, the three words allowed, is one of them; "" otherwise."""
    nearest = result.get("nearest_unruled")
    which = [name for name, word in zip("abc", result["query"]) if nearest is not None and
             _form(word) == _form(nearest)]
    if not which:
        return ""
    return (f" (without that rule the nearest word would be “{html.escape(nearest.strip())}”, {which[0]} itself: the "
            "rule flatters analogy scores; Linzen 2016)")
