"""What the app's buttons do: plain functions of plain values, testable without a browser.

`Handlers(models)` holds the models loaded once at start-up (`demo.models.load_models`) and exposes one
method per API endpoint. Every method checks its inputs and raises `gr.Error` with a plain message on bad
input; other failures become a generic `gr.Error` (the traceback goes to the server log, never to the UI).
Truncated inputs give a `gr.Warning` (a Python warning outside Gradio).
"""
from __future__ import annotations

import bisect
import functools
import html
import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
import numpy as np
import torch

import roberta
from roberta.masking import KEPT, NOT_SELECTED, OUTCOME_NAMES, DynamicMasker, StaticMasker
from roberta.model import position_ids_from_input_ids
from roberta.text import normalize_for_classifier

from . import figures
from .models import Models

log = logging.getLogger(__name__)

MAX_CHARS = 200_000  # longer texts are refused outright; anything shorter is cut to the model's max length
MAX_TOP_K = 20
MAX_TARGETS = 100  # candidate words scored at most
MAX_MASKS = roberta.pipelines.MAX_MASKS
MAX_EPOCHS = 40
MAX_SEED = 2**31 - 1
IG_STEPS = 20
MASK_RE = re.compile(r"<mask>|\[MASK\]")
# C0/C1 control characters except tab and newlines; they are invisible and mean nothing to the model
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Anything but whitespace and the characters that show nothing: zero-width spaces and joiners, direction
# marks and embeddings, word joiner and invisible operators, BOM, soft hyphen, variation selectors, tags,
# Hangul fillers. A text made only of those is empty.
VISIBLE_RE = re.compile(r"[^\s\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3"
                        r"\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
# Where a mask and the whitespace before it start; the look-behind keeps the pattern from being tried again
# at every position of a long whitespace run (which made `\s*<mask>` quadratic)
MASK_WITH_SPACE_RE = re.compile(r"(?<!\s)\s*(?:<mask>|\[MASK\])")
WORD_START_RE = re.compile(r"\s(?=\S)")
MODEL_CHOICES = [("fill-mask model (pretrained)", "mlm"), ("sentiment model (fine-tuned)", "sentiment")]
SCHEMES = {
    "static1": "BERT static, one fixed mask (dupe_factor=1)",
    "static10": "BERT static, 10 masks cycling (dupe_factor=10)",
    "dynamic": "RoBERTa dynamic (new mask every epoch)",
}
TRUNCATED_WARNING = ("The text is longer than the {n} tokens the model reads; only the first {n} tokens were "
                     "used.")


# ----------------------------------------------------------------------------- input checks and errors
def user_errors(fn):
    """Turn ValueError (user-facing messages of the pipelines and of our checks) into gr.Error, and any
    other exception into a generic gr.Error; log the traceback server-side. Gradio renders error messages
    as HTML, so any "<" or "&" in them (from the user's input) is escaped."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except gr.Error as err:
            raise gr.Error(html.escape(str(err.message), quote=False), print_exception=False) from None
        except ValueError as err:
            message = str(err)
            message = html.escape(message[:1].upper() + message[1:], quote=False)
            raise gr.Error(message, print_exception=False) from None
        except Exception:
            log.exception("unexpected error in %s", fn.__name__)
            raise gr.Error("Something went wrong while processing this input. Please try another text.",
                           print_exception=False) from None

    return wrapper


def error_html(message: str) -> str:
    """A message shown next to the input (already HTML-escaped by `user_errors`)."""
    return f'<div class="input-error" role="alert">⚠️ {message}</div>'


def keep_results(fn, n_outputs: int):
    """The UI's version of a handler: its outputs plus an update of the error box next to the input. On a
    plain error (`gr.Error`) the outputs stay as they were (`gr.skip()`) and the box shows the message, so a
    typo does not wipe the last results into red "Error" badges; a success hides the box. The public API
    endpoints call the handler itself and get the error as before."""

    @functools.wraps(fn)
    def ui(*args):
        try:
            out = fn(*args)
        except gr.Error as err:
            return (*[gr.skip()] * n_outputs, gr.update(value=error_html(err.message), visible=True))
        out = out if isinstance(out, tuple) else (out,)
        return (*out, gr.update(value="", visible=False))

    return ui


def clean_text(text) -> str:
    """The text as the model will read it: control characters removed, broken surrogates replaced."""
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise gr.Error(f"The text must be a string, got {type(text).__name__}.", print_exception=False)
    if len(text) > MAX_CHARS:
        raise gr.Error(f"The text is too long ({len(text):,} characters); paste at most {MAX_CHARS:,}.",
                       print_exception=False)
    text = CONTROL_RE.sub("", text).encode("utf-8", errors="replace").decode("utf-8")
    if not VISIBLE_RE.search(text):  # nothing but whitespace and zero-width characters
        raise gr.Error("The text is empty: type a sentence first.", print_exception=False)
    return text


def parse_int(value, name: str, lo: int, hi: int) -> int:
    """A whole number in [lo, hi] from an int, a whole float or a numeric string."""
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(value)
        if not number.is_integer():
            raise ValueError
        number = int(number)
    except (TypeError, ValueError, OverflowError):
        raise gr.Error(f"{name} must be a whole number between {lo} and {hi}, got {value!r}.",
                       print_exception=False) from None
    if not lo <= number <= hi:
        raise gr.Error(f"{name} must be between {lo} and {hi}, got {number}.", print_exception=False)
    return number


def parse_head(value, num_heads: int) -> int | None:
    """None for the average of heads, else a 1-based head number."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "average", "mean", "avg", "all")):
        return None
    return parse_int(value, "Head", 1, num_heads)


def md_escape(text: str) -> str:
    """User text inside Markdown: shown literally (no HTML, no emphasis, no links)."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~>])", r"\\\1", html.escape(text, quote=False))


def warn(message: str) -> None:
    gr.Warning(message)


# ----------------------------------------------------------------------------- readable scores
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def format_probability(p: float) -> str:
    """A probability a person can read: a percentage with three significant digits down to 0.1%
    ("12.3%", "1.02%", "0.152%"), below that scientific notation with three ("2.05 × 10⁻⁵")."""
    p = float(p)
    if not np.isfinite(p):
        return "–"
    if p <= 0:
        return "0"
    if p >= 1e-3:
        return f"{float(f'{p * 100:.3g}'):g}%"
    mantissa, exponent = f"{p:.2e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def format_log_probability(p: float) -> str:
    """ln p with two decimals (what a person compares for tiny probabilities)."""
    p = float(p)
    return f"{np.log(p):.2f}" if p > 0 else "−∞"


FILL_MASK_CSS = """<style>
.fm-view{display:flex;flex-direction:column;gap:12px}
.fm-mask h4{margin:0 0 4px;font-size:14px}
.fm-mask table.fm-table{display:table;border-collapse:collapse;width:100%;font-size:14px;border:0;margin:0}
.fm-mask tr,.fm-mask td{border:0 !important;background:transparent !important}
.fm-mask td{padding:2px 6px;vertical-align:middle}
.fm-mask td.fm-word{white-space:nowrap;max-width:12em;overflow:hidden;text-overflow:ellipsis}
.fm-mask td.fm-track{width:55%}
.fm-mask td.fm-score{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.fm-bar{display:block;height:12px;border-radius:3px;background:#6366f1;min-width:2px}
.fm-note{font-size:12px;opacity:.75;margin:2px 0 0}
</style>"""


def predictions_html(per_mask: list[list[dict]], candidates: list[str] | None = None) -> str:
    """The fill-mask answers as a person reads them: per mask, each prediction with its probability
    (`format_probability`; the exact value and ln p on hover) and a bar scaled to the top prediction of
    that mask, so the ranking shows even when every probability is small."""
    blocks = []
    for i, row in enumerate(per_mask):
        top = max((float(r["score"]) for r in row), default=0.0) or 1.0
        lines = []
        for r in row:
            p = float(r["score"])
            word = r["token_str"].strip() or repr(r["token_str"])
            width = max(0.0, min(100.0, 100 * p / top))
            lines.append(f'<tr><td class="fm-word">{html.escape(word)}</td><td class="fm-track"><span class="fm-bar" '
                         f'style="width:{width:.1f}%"></span></td><td class="fm-score" title="p = {p:.3e}, ln p = '
                         f'{format_log_probability(p)}">{format_probability(p)}</td></tr>')
        what = "your candidate words, all of them" if candidates else f"top {len(row)} of the vocabulary"
        blocks.append(f'<div class="fm-mask"><h4>&lt;mask&gt; {i + 1} <small>({what})</small></h4>'
                      f'<table class="fm-table">{"".join(lines)}</table></div>')
    note = ("Probabilities over the whole vocabulary; bars are scaled to the top answer of each mask. Hover a "
            "score for the exact value and its log-probability.")
    if candidates:
        note += (" A candidate that is not one token of the vocabulary is scored by its first piece, as in "
                 "transformers.")
    return f'{FILL_MASK_CSS}<div class="fm-view">{"".join(blocks)}<p class="fm-note">{note}</p></div>'


# ----------------------------------------------------------------------------- tokens for display
@dataclass
class Tokens:
    """One text as the model reads it, with what each token covers in the text."""

    text: str
    ids: list[int]
    offsets: list[tuple[int, int]]  # character span in `text`; (0, 0) for special tokens
    special: list[bool]
    truncated: bool
    pieces: list[str]  # each token decoded on its own (special tokens by name)

    @functools.cached_property
    def labels(self) -> list[str]:
        """Readable token labels: the characters a token covers (special tokens by name). The byte pieces
        of one character (an emoji, a CJK character) show it with a piece number: 東·1 東·2 東·3."""
        out = []
        for i, ((start, end), special, piece) in enumerate(zip(self.offsets, self.special, self.pieces)):
            if special or end <= start:
                out.append(piece if special or piece.strip() else "␣")
                continue
            label = self.text[start:end]
            if not label.strip():
                label = "␣"
            same = [j for j in range(len(self.offsets)) if self.offsets[j] == (start, end) and not self.special[j]]
            if len(same) > 1:
                label += f"·{same.index(i) + 1}"
            out.append(label)
        return out

    @functools.cached_property
    def word_index(self) -> list[int | None]:
        """For each token, the index of the whitespace-separated word of `text` it belongs to (None for
        special tokens). A token that covers only whitespace belongs to the word after it."""
        spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", self.text)]
        starts = [s for s, _ in spans]
        out = []
        for (start, _), special in zip(self.offsets, self.special):
            if special or not spans:
                out.append(None)
                continue
            k = bisect.bisect_right(starts, start) - 1
            if k < 0 or start >= spans[k][1]:
                k += 1
            out.append(min(k, len(spans) - 1))
        return out

    @functools.cached_property
    def word_start(self) -> list[bool]:
        """True for a regular token that begins a whitespace-separated word."""
        index, previous = self.word_index, None
        starts = []
        for k in index:
            starts.append(k is not None and k != previous)
            if k is not None:
                previous = k
        return starts

    def words(self) -> list[tuple[int, int]]:
        """(start, end) of the words the model read, in order."""
        spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", self.text)]
        return [spans[k] for k in sorted({k for k in self.word_index if k is not None})]


_LONGEST_TOKEN: dict[int, tuple] = {}  # id(tokenizer) -> (tokenizer, characters of its longest vocabulary entry)


def window_chars(tokenizer, max_length: int) -> int:
    """A length of text that holds more than `max_length` tokens: twice (max_length + 2) times the longest
    vocabulary entry. A byte-level BPE token covers at most as many characters as its entry has bytes."""
    entry = _LONGEST_TOKEN.get(id(tokenizer))
    if entry is None or entry[0] is not tokenizer:
        longest = max(map(len, tokenizer.get_vocab(with_added_tokens=True)), default=1)
        entry = _LONGEST_TOKEN[id(tokenizer)] = (tokenizer, max(longest, 1))
    return 2 * (max_length + 2) * entry[1]


def cut_to_window(text: str, tokenizer, max_length: int) -> str:
    """The beginning of `text` that still gives the model its first `max_length` tokens, so that a 200,000-
    character paste is not tokenized (and scanned character by character) for the ~128 tokens the model
    reads. The cut falls before a space that starts a word, in the second half of `window_chars`, so every
    word before it tokenizes as in the full text; only a "word" longer than half the window is cut inside.
    The cut text must still be longer than the window in tokens (checked), else the whole text is kept."""
    limit = window_chars(tokenizer, max_length)
    if len(text) <= limit:
        return text
    half = limit // 2
    starts = [m.start() for m in WORD_START_RE.finditer(text, half, limit + 1)]
    cut = text[:starts[-1] if starts else limit]
    if len(tokenizer.encode(cut).ids) <= max_length:  # a tokenizer that drops characters: no cut
        return text
    return cut


def tokenize(tokenizer, text: str, max_length: int) -> Tokens:
    """`roberta.encode` (the ids the pipelines use) plus character offsets for display, of the text cut to
    what the model can read (`cut_to_window`; `Tokens.text` is that text)."""
    text = cut_to_window(text, tokenizer, max_length)
    input_ids, _, truncated = roberta.encode(tokenizer, text, max_length)
    ids = input_ids[0].tolist()
    encoding = tokenizer.encode(text)
    offsets, all_ids = list(encoding.offsets), list(encoding.ids)
    if truncated[0]:
        offsets, all_ids = offsets[:max_length - 1] + offsets[-1:], all_ids[:max_length - 1] + all_ids[-1:]
    if all_ids != ids:  # cannot happen with a plain tokenizer; fall back to no offsets rather than wrong ones
        offsets = [(0, 0)] * len(ids)
    special_ids = {tokenizer.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")}
    pieces = [tokenizer.decode([i], skip_special_tokens=False) for i in ids]
    return Tokens(text, ids, [tuple(o) for o in offsets], [i in special_ids for i in ids], bool(truncated[0]), pieces)


def token_text(tokenizer, token_id: int) -> str:
    return tokenizer.decode([token_id], skip_special_tokens=False)


# ----------------------------------------------------------------------------- attribution and rollout
def _forward_from_word_embeddings(model, input_ids, word_embeds):
    """RobertaForSequenceClassification's forward with the word embeddings given (no padding, eval mode).
    Re-traced here instead of hooking the shared model, which other requests use at the same time."""
    emb = model.roberta.embeddings
    positions = position_ids_from_input_ids(input_ids, model.config.pad_token_id)  # (B, T)
    x = emb.dropout(emb.LayerNorm(word_embeds + emb.position_embeddings(positions)))  # (B, T, H)
    for layer in model.roberta.encoder.layer:
        x, _ = layer(x, None, False)
    return model.classifier(x)  # (B, L)


def _class_score(logits: torch.Tensor, target: int) -> torch.Tensor:
    """Evidence for `target`: its logit minus the mean of the other logits (the log-odds for two labels)."""
    if logits.shape[-1] == 1:
        return logits[:, 0]
    others = torch.cat([logits[:, :target], logits[:, target + 1:]], dim=-1)
    return logits[:, target] - others.mean(dim=-1)


def integrated_gradients(model, input_ids: list[int], target: int, baseline_id: int, special_ids,
                         steps: int = IG_STEPS):
    """Integrated gradients (Sundararajan et al. 2017) on the word embeddings for the class score of
    `target`, from a baseline where every regular token is `baseline_id` (special tokens kept), with the
    midpoint rule over `steps` points, one batch. Returns (attributions (T,), score(x), score(baseline));
    the attributions sum to about score(x) - score(baseline) (completeness)."""
    with torch.inference_mode(False), torch.enable_grad():
        ids = torch.tensor([input_ids], dtype=torch.long)  # (1, T)
        table = model.roberta.embeddings.word_embeddings
        is_special = torch.isin(ids, torch.tensor(sorted(special_ids), dtype=torch.long))
        base_ids = torch.where(is_special, ids, torch.full_like(ids, baseline_id))
        x, base = table(ids).detach(), table(base_ids).detach()  # (1, T, H)
        alphas = (torch.arange(steps, dtype=x.dtype) + 0.5) / steps  # (S,)
        path = (base + alphas[:, None, None] * (x - base)).requires_grad_(True)  # (S, T, H)
        scores = _class_score(_forward_from_word_embeddings(model, ids.expand(steps, -1), path), target)  # (S,)
        (grads,) = torch.autograd.grad(scores.sum(), path)  # (S, T, H)
        attributions = ((x - base)[0] * grads.mean(dim=0)).sum(dim=-1)  # (T,)
        with torch.no_grad():
            ends = _class_score(_forward_from_word_embeddings(model, ids.expand(2, -1), torch.cat([x, base])), target)
    return attributions.detach().numpy(), float(ends[0]), float(ends[1])


def merge_words(tokens: Tokens, token_scores) -> list[tuple[int, int, float]]:
    """Sum token scores over the BPE pieces of each whitespace-separated word: [(start, end, score)]."""
    totals: dict[int, float] = {}
    for k, score in zip(tokens.word_index, token_scores):
        if k is not None:
            totals[k] = totals.get(k, 0.0) + float(score)
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", tokens.text)]
    return [(*spans[k], totals[k]) for k in sorted(totals)]


def attention_rollout(attentions: np.ndarray) -> np.ndarray:
    """Abnar & Zuidema (2020): average heads, add the residual (0.5 A + 0.5 I), renormalise rows, multiply
    through the layers. attentions (L, nh, T, T) -> (T, T), each row a distribution over input tokens."""
    T = attentions.shape[-1]
    eye = np.eye(T, dtype=np.float64)
    rollout = eye
    for layer in attentions.astype(np.float64).mean(axis=1):  # (T, T) per layer, bottom to top
        a = 0.5 * layer + 0.5 * eye
        a = a / a.sum(axis=-1, keepdims=True)
        rollout = a @ rollout
    return rollout


# HighlightedText's colours: plus rgba(239, 68, 60, a), minus rgba(128, 90, 213, a)
SWATCH = '<span style="background: rgba({rgb}, 0.75); padding: 0 6px; border-radius: 3px">{name}</span>'


def polarity(config) -> tuple[int, str, str]:
    """(index of the label that plus means "towards", its name, the other side's name): the label named
    "positive" when there is one, else the second label (index 1), so colours never flip with the answer."""
    id2label = {int(k): str(v) for k, v in (config.id2label or {}).items()}
    index = next((i for i, name in id2label.items() if name.lower() in ("positive", "pos")),
                 1 if len(id2label) > 1 else 0)
    others = [name for i, name in sorted(id2label.items()) if i != index]
    away = others[0] if len(others) == 1 else ("the other labels" if others else "the other label")
    return index, id2label.get(index, f"LABEL_{index}"), away


# ----------------------------------------------------------------------------- the handlers
class Handlers:
    def __init__(self, models: Models):
        self.models = models
        self._attention_cache: OrderedDict = OrderedDict()
        self._cache_lock = threading.Lock()

    def _need(self, key: str):
        loaded = self.models[key]
        if not loaded.available:
            raise gr.Error(loaded.error, print_exception=False)
        return loaded

    # ---- 1. fill mask
    @user_errors
    def fill_mask(self, text, top_k=5, targets=None):
        """Predictions for every <mask>: (completed sentence, {token: probability} per mask slot or None, raw,
        the readable view: per mask, every prediction with its probability and a bar scaled to the top one)."""
        loaded = self._need("mlm")
        pipe = loaded.pipeline
        text = clean_text(text)
        top_k = parse_int(top_k, "Top-k", 1, MAX_TOP_K)
        n_masks = len(MASK_RE.findall(text))
        if n_masks == 0:
            raise gr.Error("There is no mask in the text: write <mask> where a word should be predicted, e.g. "
                           "“Paris is the capital of <mask>.”", print_exception=False)
        if n_masks > MAX_MASKS:
            raise gr.Error(f"The text has {n_masks} masks; at most {MAX_MASKS} are allowed.", print_exception=False)
        if targets is not None and not isinstance(targets, str):
            raise gr.Error(f"The candidate words must be a string, got {type(targets).__name__}.",
                           print_exception=False)
        if targets and len(targets) > MAX_CHARS:
            raise gr.Error(f"The candidate words are too long ({len(targets):,} characters).", print_exception=False)
        words = [w.strip() for w in re.split(r"[,\n]", targets or "") if w.strip()]
        if len(words) > MAX_TARGETS:
            raise gr.Error(f"There are {len(words):,} candidate words; at most {MAX_TARGETS} are allowed.",
                           print_exception=False)
        full_length = len(text)
        text = cut_to_window(text, loaded.tokenizer, pipe.max_length)  # the rest is beyond what the model reads
        if len(MASK_RE.findall(text)) < n_masks:
            raise gr.Error(f"The mask is beyond the first {pipe.max_length} tokens, which is all the model reads: "
                           "shorten the text or move the mask earlier.", print_exception=False)
        target_tokens = None
        if words:  # after a space (the usual case), a word is the token with its leading space
            at_start = MASK_RE.match(text.lstrip()) is not None
            target_tokens = [w if at_start else " " + w for w in words]
        # every candidate word is scored, whatever top-k (top-k is the number of vocabulary predictions)
        results = pipe(text, top_k=len(target_tokens) if target_tokens else top_k, targets=target_tokens)
        per_mask = results if n_masks > 1 else [results]
        if any(r.get("truncated") for row in per_mask for r in row):
            warn(TRUNCATED_WARNING.format(n=pipe.max_length))
        labels = []
        for i in range(MAX_MASKS):
            if i < len(per_mask):
                scores = {}
                for r in per_mask[i]:
                    name = r["token_str"].strip() or repr(r["token_str"])
                    while name in scores:  # " Paris" and "Paris" both show as Paris
                        name += "\u200b"
                    scores[name] = float(r["score"])
                labels.append(scores)
            else:
                labels.append(None)
        filled = self._completed(text, [row[0]["token_str"] for row in per_mask])
        if len(text) < full_length:
            filled.append((" …", None))
        raw = [[{k: v for k, v in r.items()} for r in row] for row in per_mask]
        return (filled, *labels, raw, predictions_html(per_mask, words))

    @staticmethod
    def _completed(text: str, fills: list[str]) -> list[tuple[str, str | None]]:
        """The text with each mask (and the space it absorbs) replaced by its top prediction, highlighted."""
        parts, last = [], 0
        for i, match in enumerate(MASK_WITH_SPACE_RE.finditer(text)):
            if i >= len(fills):
                break
            parts.append((text[last:match.start()], None))
            parts.append((fills[i], f"<mask> {i + 1}"))
            last = match.end()
        parts.append((text[last:], None))
        return [(t, c) for t, c in parts if t]

    # ---- 2. sentiment
    @user_errors
    def classify(self, text):
        """(label probabilities, per-word attribution in [-1, 1] for HighlightedText, explanation). A word's
        score is its push towards the positive label (`polarity`): plus towards positive, minus towards
        negative, whatever the prediction."""
        loaded = self._need("sentiment")
        pipe, model, tokenizer = loaded.pipeline, loaded.model, loaded.tokenizer
        text = clean_text(text)
        # as in fine-tuning: detokenized, lower-cased; of no more text than the model can read
        model_text = normalize_for_classifier(text, max_chars=8 * window_chars(tokenizer, pipe.max_length))
        model_text = cut_to_window(model_text, tokenizer, pipe.max_length)
        if not VISIBLE_RE.search(model_text):
            raise gr.Error("The text is empty: type a sentence first.", print_exception=False)
        results = pipe(model_text)
        if results and results[0].get("truncated"):
            warn(TRUNCATED_WARNING.format(n=pipe.max_length))
        probabilities = {r["label"]: float(r["score"]) for r in results}
        best = results[0]["label"]
        # fixed polarity: every word's push towards the positive label, whatever the prediction (a plus is
        # always "towards positive", so "gorgeous" and "bad" never share a colour)
        target, toward, away = polarity(model.config)
        tokens = tokenize(tokenizer, model_text, pipe.max_length)
        special_ids = {tokenizer.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")}
        attributions, _, _ = integrated_gradients(model, tokens.ids, target, tokenizer.token_to_id("<pad>"),
                                                  special_ids)
        words = merge_words(tokens, attributions)
        # Show the user's own text when normalising only changed the case (same characters, same places)
        own = text[:len(model_text)]
        shown = own if own.lower() == model_text else model_text
        scale = max((abs(v) for _, _, v in words), default=0.0) or 1.0
        highlighted, last = [], words[0][0] if words else 0
        for start, end, score in words:
            if start > last:
                highlighted.append((shown[last:start], None))
            highlighted.append((shown[start:end], round(score / scale, 3)))
            last = end
        if tokens.truncated:
            highlighted.append((" … (the rest was cut off)", None))
        text = shown
        ranked = sorted(words, key=lambda w: -w[2])
        pro = [md_escape(text[s:e]) for s, e, v in ranked[:3] if v > 0]
        con = [md_escape(text[s:e]) for s, e, v in reversed(ranked[-3:]) if v < 0]
        toward, away = md_escape(toward), md_escape(away)
        explanation = (
            f"**How to read it:** {SWATCH.format(rgb='239, 68, 60', name='red')} words push towards **{toward}**, "
            f"{SWATCH.format(rgb='128, 90, 213', name='purple')} words push towards **{away}**, whatever the model "
            f"answers (here **{md_escape(best)}**, {_pct(probabilities[best])}); "
            f"the stronger the colour, the bigger the push. (Integrated gradients over {IG_STEPS} steps from an "
            f"all-padding input, summed over each word's pieces, scaled so the strongest word is ±1.)\n\n"
            f"Most towards *{toward}*: {', '.join(f'“{w}”' for w in pro) or '—'} · "
            f"most towards *{away}*: {', '.join(f'“{w}”' for w in con) or '—'}"
        )
        return probabilities, highlighted, explanation

    # ---- 3. attention
    def _attention_data(self, key: str, text: str):
        """Tokens and attentions (L, nh, T, T) of one text, cached for the token picker."""
        cache_key = (key, text)
        with self._cache_lock:
            if cache_key in self._attention_cache:
                self._attention_cache.move_to_end(cache_key)
                return self._attention_cache[cache_key]
        loaded = self._need(key)
        tokens = tokenize(loaded.tokenizer, text, loaded.config.max_length)
        with torch.inference_mode():
            out = loaded.model(torch.tensor([tokens.ids]), output_attentions=True)
        attentions = torch.stack([a[0] for a in out.attentions]).float().numpy()  # (L, nh, T, T)
        with self._cache_lock:
            self._attention_cache[cache_key] = (tokens, attentions)
            while len(self._attention_cache) > 8:
                self._attention_cache.popitem(last=False)
        return tokens, attentions

    def _attention_inputs(self, text, layer, head, model):
        if model not in ("mlm", "sentiment"):
            raise gr.Error(f"model must be one of {[v for _, v in MODEL_CHOICES]}, got {model!r}.",
                           print_exception=False)
        loaded = self._need(model)
        text = clean_text(text)
        cfg = loaded.config
        if model == "sentiment":  # the classifier reads normalised text, as in fine-tuning
            text = normalize_for_classifier(text, max_chars=8 * window_chars(loaded.tokenizer, cfg.max_length))
            if not VISIBLE_RE.search(text):
                raise gr.Error("The text is empty: type a sentence first.", print_exception=False)
        text = cut_to_window(text, loaded.tokenizer, cfg.max_length)  # also what the cache keeps
        layer = parse_int(layer, "Layer", 1, cfg.num_hidden_layers)
        head = parse_head(head, cfg.num_attention_heads)
        tokens, attentions = self._attention_data(model, text)
        return loaded, tokens, attentions, layer, head

    @staticmethod
    def _matrix(attentions, layer, head):
        chosen = attentions[layer - 1]  # (nh, T, T)
        if head is None:
            return chosen.mean(axis=0), f"layer {layer}, average of {chosen.shape[0]} heads"
        return chosen[head - 1], f"layer {layer}, head {head}"

    @staticmethod
    def _default_query(tokens: Tokens) -> int:
        return next((i for i, s in enumerate(tokens.special) if not s), 0)

    @user_errors
    def attention(self, text, layer=1, head="average", model="mlm"):
        """(heatmap, all heads of the layer, rollout, bars of the first word, token picker update, notes)."""
        loaded, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        if tokens.truncated:
            warn(TRUNCATED_WARNING.format(n=loaded.config.max_length))
        labels = tokens.labels
        matrix, what = self._matrix(attentions, layer, head)
        heatmap = figures.attention_heatmap(matrix, labels, f"Attention, {what}")
        grid = figures.head_grid(attentions[layer - 1], labels, layer)
        rollout = figures.attention_heatmap(attention_rollout(attentions), labels,
                                            f"Attention rollout through all {attentions.shape[0]} layers",
                                            cbar_label="share of information from each input token")
        query = self._default_query(tokens)
        bars = figures.attention_bars(matrix[query], labels, query,
                                      f"Where token {query} “{labels[query]}” attends ({what})")
        picker = gr.update(choices=[(f"{i}: {label}", i) for i, label in enumerate(labels)], value=query)
        notes = (f"{len(labels)} tokens{' (cut to the maximum length)' if tokens.truncated else ''} · "
                 f"{loaded.title} · {attentions.shape[0]} layers × {attentions.shape[1]} heads. "
                 "Each row of a heatmap is one token's attention over all tokens (it sums to 1). "
                 "Rollout follows attention through every layer, counting the residual connection, to "
                 "estimate how much each input token contributes to each position at the top.")
        return heatmap, grid, rollout, bars, picker, notes

    def _query(self, tokens: Tokens, token) -> int:
        """The picked token when it is one of this text's, else the first word."""
        try:
            query = int(token)
        except (TypeError, ValueError):
            return self._default_query(tokens)
        return query if 0 <= query < len(tokens.labels) else self._default_query(tokens)

    @user_errors
    def attention_layer(self, text, layer=1, head="average", token=None, model="mlm"):
        """A new layer: (heatmap, all heads of the layer, bars of the picked token); the rollout, which
        does not depend on the layer, is not redrawn (each figure costs ~0.5 s here, drawing and sending)."""
        _, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        heatmap, bars = self._head_view(tokens, attentions, layer, head, token)
        return heatmap, figures.head_grid(attentions[layer - 1], tokens.labels, layer), bars

    @user_errors
    def attention_head(self, text, layer=1, head="average", token=None, model="mlm"):
        """A new head: (heatmap, bars of the picked token) only."""
        _, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        return self._head_view(tokens, attentions, layer, head, token)

    def _head_view(self, tokens, attentions, layer, head, token):
        labels, query = tokens.labels, self._query(tokens, token)
        matrix, what = self._matrix(attentions, layer, head)
        return (figures.attention_heatmap(matrix, labels, f"Attention, {what}"),
                figures.attention_bars(matrix[query], labels, query,
                                       f"Where token {query} “{labels[query]}” attends ({what})"))

    @user_errors
    def attention_token(self, text, layer=1, head="average", token=1, model="mlm"):
        """Bar chart of where one token (0-based index, <s> is 0) attends in the chosen layer/head."""
        _, tokens, attentions, layer, head = self._attention_inputs(text, layer, head, model)
        labels = tokens.labels
        query = parse_int(token, "Token", 0, len(labels) - 1)
        matrix, what = self._matrix(attentions, layer, head)
        return figures.attention_bars(matrix[query], labels, query,
                                      f"Where token {query} “{labels[query]}” attends ({what})")

    # ---- 4. static vs dynamic masking
    @user_errors
    def masking(self, text, epochs=10, seed=0):
        """(HTML table epoch by epoch, summary rows, coverage plot, MLM predictions at the last epoch)."""
        mlm = self.models.mlm
        loaded = mlm if mlm.available else self._need("sentiment")  # its tokenizer, at least
        tokenizer, max_length = loaded.tokenizer, loaded.config.max_length
        text = clean_text(text)
        epochs = parse_int(epochs, "Epochs", 1, MAX_EPOCHS)
        seed = parse_int(seed, "Seed", 0, MAX_SEED)
        tokens = tokenize(tokenizer, text, max_length)
        if tokens.truncated:
            warn(TRUNCATED_WARNING.format(n=max_length))
        eligible = [not s for s in tokens.special]
        n_eligible = sum(eligible)
        if n_eligible == 0:
            raise gr.Error("The text has no ordinary tokens to mask, only special ones such as the mask token.",
                           print_exception=False)
        ids = torch.tensor([tokens.ids])  # (1, T)
        runs = simulate_masking(tokenizer, ids, epochs, seed)
        stats, curves = [], {}
        for key, batches in runs.items():
            seen, ever, curve = set(), np.zeros(len(tokens.ids), dtype=bool), []
            for b in batches:
                seen.add((tuple(b.input_ids[0].tolist()), tuple(b.outcome[0].tolist())))
                ever |= (b.outcome[0] != NOT_SELECTED).numpy()
                curve.append(float(ever.sum()) / n_eligible)
            curves[key] = curve
            stats.append([SCHEMES[key], len(seen), f"{int(ever.sum())} of {n_eligible}",
                          round(100 * curve[-1], 1)])
        table = masking_table(tokenizer, tokens, runs)
        plot = figures.coverage_plot(curves, SCHEMES)
        predictions = self._mlm_predictions(tokens, runs) if mlm.available else [
            ["(the fill-mask model is not available)", None, "", "", "", "", None, ""]]
        return table, stats, plot, predictions

    def _mlm_predictions(self, tokens: Tokens, runs) -> list[list]:
        """Top-1 prediction of the MLM at every target of each scheme's last epoch."""
        mlm = self.models.mlm
        tokenizer, labels = mlm.tokenizer, tokens.labels
        last = {key: batches[-1] for key, batches in runs.items()}
        inputs = torch.cat([b.input_ids for b in last.values()])  # (3, T)
        targets = torch.cat([b.outcome for b in last.values()]) != NOT_SELECTED  # (3, T)
        model = mlm.model
        with torch.inference_mode():  # project only the N targets onto the vocabulary: (N, V), not (3, T, V)
            hidden, _ = model.roberta(inputs)  # (3, T, H)
            logits = model.lm_head(hidden[targets], model.roberta.embeddings.word_embeddings.weight)  # (N, V)
            best_p, best = logits.float().softmax(dim=-1).max(dim=-1)  # (N,), (N,)
        found = {(r, c): i for i, (r, c) in enumerate(torch.nonzero(targets).tolist())}  # row-major, as hidden[targets]
        rows = []
        for row, (key, b) in enumerate(last.items()):
            positions = torch.nonzero(b.outcome[0] != NOT_SELECTED).squeeze(-1).tolist()
            if not positions:
                rows.append([SCHEMES[key], None, "(no token of this short sentence was selected in the last epoch: "
                             "each is picked with probability 0.15)", "", "", "", None, ""])
            for pos in positions:
                p, pick = best_p[found[row, pos]], best[found[row, pos]]
                original = int(tokens.ids[pos])
                outcome = int(b.outcome[0, pos])
                shown = token_text(tokenizer, int(b.input_ids[0, pos]))
                rows.append([SCHEMES[key], pos, labels[pos], OUTCOME_NAMES[outcome], shown,
                             token_text(tokenizer, int(pick)), round(float(p), 3),
                             "✓" if int(pick) == original else "✗"])
        return rows


def simulate_masking(tokenizer, ids: torch.Tensor, epochs: int, seed: int) -> dict:
    """What each scheme feeds the model for one sequence (example id 0), epoch by epoch."""
    maskers = {
        "static1": StaticMasker.from_tokenizer(tokenizer, seed=seed, dupe_factor=1),
        "static10": StaticMasker.from_tokenizer(tokenizer, seed=seed, dupe_factor=10),
        "dynamic": DynamicMasker.from_tokenizer(tokenizer, seed=seed),
    }
    runs = {}
    for key, masker in maskers.items():
        if key == "dynamic":
            runs[key] = [masker(ids) for _ in range(epochs)]
        else:
            runs[key] = [masker(ids, [0], epoch) for epoch in range(epochs)]
    return runs


RECIPE = """## Training recipe
- **Pretraining** (`python -m train.pretrain`): masked language modelling only, no next-sentence prediction;
documents packed into full rows (RoBERTa's FULL-SENTENCES); 15% of tokens selected, of which 80% become
`<mask>`, 10% a random token and 10% stay unchanged, with a fresh mask every time a row is seen (dynamic
masking); byte-level BPE tokenizer; AdamW with warm-up and a decaying learning rate.
- **Fine-tuning** (`python -m train.finetune`): the pretrained encoder plus a new classification head on `<s>`,
trained on SST-2 (texts detokenized and lower-cased, here as in training), the best checkpoint on the SST-2
dev set kept.

The exact settings, data, hardware and times of each run are in its model card.
"""

MASKING_CSS = """<style>
.mk-scroll{max-height:640px;overflow:auto;border:1px solid #d4d4d8}
.mk-table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:13px;line-height:1.9}
.mk-table th,.mk-table td{border:1px solid #d4d4d8;padding:4px 6px;vertical-align:top;text-align:left;
  overflow-wrap:anywhere}
.mk-table thead th{position:sticky;top:0;background:#f4f4f5;color:#18181b;z-index:1}
.mk-table tbody th{background:#f4f4f5;color:#18181b;white-space:nowrap;font-weight:600}
.mk-table col.mk-epoch{width:5.5em}
.mk-table td i{font-style:normal;border-radius:3px;padding:1px 1px;color:inherit}
.mk-1{background:#fca5a5;color:#18181b;font-weight:600}
.mk-2{background:#fdba74;color:#18181b}
.mk-3{background:#93c5fd;color:#18181b}
.mk-copy{font-size:11px;color:#71717a;margin-right:.4em}
.mk-table i[title]{position:relative;cursor:help}
.mk-table i[title]:hover::after{content:attr(title);position:absolute;left:0;top:100%;z-index:2;background:#18181b;
  color:#fff;padding:0 5px;border-radius:3px;font-size:12px;font-weight:400;white-space:nowrap}
.mk-legend span{margin-right:1em;padding:1px 6px;border-radius:3px;color:#18181b;display:inline-block}
@media (max-width:700px){
.mk-table,.mk-table tbody,.mk-table tr,.mk-table td,.mk-table tbody th{display:block;width:auto}
.mk-table colgroup,.mk-table thead{display:none}
.mk-table td::before{display:block;font-size:11px;font-weight:600;color:#52525b}
.mk-table td:nth-of-type(1)::before{content:"BERT static, one fixed mask"}
.mk-table td:nth-of-type(2)::before{content:"BERT static, 10 masks cycling"}
.mk-table td:nth-of-type(3)::before{content:"RoBERTa dynamic, a new mask every epoch"}
}
</style>"""


def masking_table(tokenizer, tokens: Tokens, runs: dict) -> str:
    """An HTML table, one row per epoch, one column per scheme; every token escaped and coloured by outcome.

    Sized for 128 tokens x 40 epochs x 3 schemes (15,360 tokens): each token is a bare `<i>` (styled by one
    CSS rule), and only the prediction targets carry a class and a title (the original token)."""
    labels, starts = tokens.labels, tokens.word_start
    escaped = [html.escape(label, quote=True) for label in labels]
    replaced: dict[int, str] = {}  # token id -> how a masked or random replacement shows

    def shown(token_id: int) -> str:
        if token_id not in replaced:
            replaced[token_id] = html.escape(token_text(tokenizer, token_id).strip())
        return replaced[token_id]

    legend = ('<div class="mk-legend"><span class="mk-1">&lt;mask&gt; (80% of targets)</span>'
              '<span class="mk-2">random token (10%)</span><span class="mk-3">unchanged, still a target (10%)'
              '</span><span style="border:1px solid #d4d4d8">not selected (85% of tokens)</span></div>')
    head = "".join(f"<th>{html.escape(name)}</th>" for name in SCHEMES.values())
    regular = [pos for pos, special in enumerate(tokens.special) if not special]
    gaps = ["" if i == 0 or not starts[pos] else " " for i, pos in enumerate(regular)]  # lines wrap between words
    rows = []
    epochs = len(next(iter(runs.values())))
    for e in range(epochs):
        cells = []
        for key in SCHEMES:
            b = runs[key][e]
            ids, outcomes = b.input_ids[0].tolist(), b.outcome[0].tolist()
            parts = []
            for gap, pos in zip(gaps, regular):
                outcome = outcomes[pos]
                if outcome == NOT_SELECTED:
                    parts.append(f"{gap}<i>{escaped[pos]}</i>")
                else:
                    text = escaped[pos] if outcome == KEPT else shown(ids[pos])
                    parts.append(f'{gap}<i class="mk-{outcome}" title="{escaped[pos]}">{text}</i>')
            copy = {"static1": "the one mask", "static10": f"mask {e % 10 + 1} of 10", "dynamic": "new mask"}[key]
            cells.append(f'<td><span class="mk-copy">{copy}</span> {"".join(parts)}</td>')
        rows.append(f"<tr><th>epoch {e + 1}</th>{''.join(cells)}</tr>")
    note = ('<p>Hover over (or tap) a coloured token to see the original, which the model must predict there. Static '
            'masking repeats its masks (BERT duplicated its data 10 times with different masks, so over 40 epochs '
            'each mask was seen 4 times); dynamic masking draws a new one every time the sentence is fed to the '
            'model.</p>')
    return (f'{MASKING_CSS}<div class="mk-wrap">{legend}<div class="mk-scroll"><table class="mk-table">'
            f'<colgroup><col class="mk-epoch"><col><col><col></colgroup><thead><tr><th></th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>{note}</div>')


MASKING_COLUMNS = ["scheme", "distinct masks shown", "positions ever a target", "coverage %"]
PREDICTION_COLUMNS = ["scheme", "position", "original", "what happened", "model saw", "top-1 prediction",
                      "probability", "correct"]


# ----------------------------------------------------------------------------- about tab and ablation
def _flatten(d, prefix=""):
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from _flatten(v, key + ".")
        else:
            yield key, v


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return f"[{len(v)} values]" if len(v) > 6 else ", ".join(_fmt(x) for x in v)
    return str(v)


def _md_cell(v) -> str:
    return html.escape(_fmt(v)).replace("|", "\\|").replace("\n", " ")


def metrics_markdown(metrics) -> str:
    if not isinstance(metrics, dict) or not metrics:
        return "_metrics.json: not available._"
    rows = [f"| {_md_cell(k)} | {_md_cell(v)} |" for k, v in _flatten(metrics)]
    return "| metric | value |\n|---|---|\n" + "\n".join(rows[:60])


def find_accuracy(metrics) -> float | None:
    """An SST-2 accuracy in metrics.json (validation/eval preferred), as a fraction."""
    if not isinstance(metrics, dict):
        return None
    found = [(k.lower(), v) for k, v in _flatten(metrics) if "acc" in k.lower() and isinstance(v, (int, float))
             and not isinstance(v, bool)]
    if not found:
        return None
    found.sort(key=lambda kv: (not any(w in kv[0] for w in ("val", "eval", "dev", "test")), "best" not in kv[0]))
    value = float(found[0][1])
    return value / 100 if value > 1 else value


def parameter_table(model) -> tuple[str, int]:
    """Markdown table of components with their parameter counts, and the total."""
    cfg = model.config
    named = dict(model.named_parameters())

    def count(prefix):
        return sum(p.numel() for n, p in named.items() if n.startswith(prefix))

    H, L, nh, ff, V = (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.intermediate_size,
                       cfg.vocab_size)
    layer = "roberta.encoder.layer.0."
    rows = [
        ("Token embeddings", f"{V:,} × {H}", count("roberta.embeddings.word_embeddings")),
        ("Position embeddings", f"{cfg.max_position_embeddings} × {H}",
         count("roberta.embeddings.position_embeddings")),
        ("Embedding LayerNorm", f"2 × {H}", count("roberta.embeddings.LayerNorm")),
        (f"Self-attention Q, K, V ({nh} heads of {H // nh}) × {L} layers", f"3 × ({H} × {H} + {H})",
         L * sum(count(layer + f"attention.self.{m}") for m in ("query", "key", "value"))),
        (f"Attention output + LayerNorm × {L}", f"{H} × {H} + {H} + 2 × {H}", L * count(layer + "attention.output")),
        (f"Feed-forward (GELU) × {L}", f"{H} × {ff} + {ff} + {ff} × {H} + {H}",
         L * (count(layer + "intermediate") + count(layer + "output.dense"))),
        (f"Feed-forward LayerNorm × {L}", f"2 × {H}", L * count(layer + "output.LayerNorm")),
    ]
    if any(n.startswith("lm_head") for n in named):
        rows.append(("MLM head: dense + GELU + LayerNorm + bias (decoder tied to token embeddings)",
                     f"{H} × {H} + {H} + 2 × {H} + {V:,}", count("lm_head")))
    if any(n.startswith("classifier") for n in named):
        rows.append(("Classification head on <s>: dense + tanh + projection",
                     f"{H} × {H} + {H} + {H} × {cfg.num_labels} + {cfg.num_labels}", count("classifier")))
    total = sum(p.numel() for p in named.values())
    lines = ["| component | shape | parameters |", "|---|---|---:|"]
    lines += [f"| {html.escape(a)} | {b} | {c:,} |" for a, b, c in rows]
    lines.append(f"| **total** | | **{total:,}** |")
    return "\n".join(lines), total


def _millions(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 100_000 else f"{n:,}"


def shown_source(source: str) -> str:
    """Where a model came from, without the machine's paths: a Hub repo id as it is, a folder inside the
    repository relative to it (assets/mini-roberta-mlm), any other folder by its name."""
    from .models import ROOT

    if not roberta.hub.is_local(source):
        return source
    path = Path(source).resolve()
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return path.name


def card_link(loaded) -> str:
    """Where the full model card is: its Hub page, or README.md in its folder."""
    source = shown_source(loaded.source)
    if not roberta.hub.is_local(loaded.source):
        return f"full model card: [huggingface.co/{source}](https://huggingface.co/{source})"
    return f"full model card: {_code(source + '/README.md')}" if "readme" in loaded.extras else "no model card"


def _code(text: str) -> str:
    """Text as Markdown code (shown literally; a backtick inside would end it)."""
    return f"`{str(text).replace('`', '')}`"  # code spans escape < and & themselves


def _minutes(m: float) -> str:
    return f"{m:.0f} min" if m < 120 else f"{m / 60:.1f} h"


def summary_card(loaded) -> str:
    """A short Markdown card for the About tab, from the model's metrics.json and phases.json (read at
    run time; a figure that is not there is not shown): size, data, training, held-out figures."""
    if not loaded.available:
        return f"### {loaded.title}\n\n{md_escape(loaded.error)}"
    facts, cfg = model_facts(loaded), loaded.config
    rows = [("size", f"{_millions(facts['parameters'])} parameters: {cfg.num_hidden_layers} layers, hidden "
                     f"{cfg.hidden_size}, {cfg.num_attention_heads} heads, up to {cfg.max_length} tokens")]
    metrics = loaded.extras.get("metrics") if isinstance(loaded.extras.get("metrics"), dict) else {}
    if facts.get("data"):
        data = ", ".join(_code(d) for d in facts["data"])
        if "train_examples" in facts:
            data += f" ({facts['train_examples']:,} examples)"
        rows.append(("data", data))
    training = []
    if "train_tokens" in facts:
        training.append(f"{facts['train_tokens'] / 1e6:.1f}M tokens")
    if "train_minutes" in facts:
        training.append(f"{_minutes(facts['train_minutes'])} of training"
                        + (f" ({_minutes(facts['wall_minutes'])} wall time)" if "wall_minutes" in facts else ""))
    if "cores" in facts and facts.get("device") == "cpu":
        training.append(f"on a {facts['cores']}-core CPU")
    phases = loaded.extras.get("phases")
    if isinstance(phases, list) and len(phases) > 1:
        training.append(f"in {len(phases)} phases")
    if training:
        rows.append(("training", ", ".join(training)))
    if "mlm_accuracy" in facts:
        where = dataset_name(metrics["mlm"].get("source", "held-out text"))
        rows.append(("held-out masked words", (
            f"**{_pct(facts['mlm_accuracy'])}** guessed right (top-1)"
            + (f", perplexity {facts['mlm_perplexity']:.0f}" if "mlm_perplexity" in facts else "")
            + f" on {_code(where)}"
            + (f" in {facts['mlm_rows']}-token rows, the length it last trained on" if "mlm_rows" in facts else ""))))
        if "eval_accuracy" in facts:
            rows.append(("the same, training's own check", (
                f"{_pct(facts['eval_accuracy'])} at the end of training, in rows of up to {cfg.max_length} tokens: "
                "longer rows are predicted worse, so the two figures differ")))
    elif "eval_accuracy" in facts:
        rows.append(("held-out masked words", f"**{_pct(facts['eval_accuracy'])}** guessed right (top-1)"))
    if "probe" in facts:
        n = int(facts["probe"]["sentences"])
        rows.append(("everyday sentences", f"the expected word first in {round(facts['probe']['top1'] * n)} of {n}, "
                                           f"in the top 5 in {round(facts['probe']['top5'] * n)} of {n}"))
    if "dev_accuracy" in facts:
        rows.append(("SST-2 dev", f"**{_pct(facts['dev_accuracy'])}** right"
                     + (f" of {facts['dev_examples']:,} sentences" if "dev_examples" in facts else "")))
    if "imdb_accuracy" in facts:
        rows.append(("IMDB reviews", f"**{_pct(facts['imdb_accuracy'])}** right"
                     + (f" of {facts['imdb_examples']:,}" if "imdb_examples" in facts else "")
                     + " (longer texts than it was trained on)"))
    checks = facts.get("checks")
    if checks:
        rows.append(("behaviour checks", f"{checks.get('right', 0)}/{int(checks['n'])} right"))
    table = "\n".join(f"- **{name}**: {value}" for name, value in rows)  # a list reads well on a phone too
    return f"### {loaded.title}\n\n{table}\n\nLoaded from {_code(shown_source(loaded.source))}; {card_link(loaded)}."


def calibration_markdown(metrics: dict | None) -> str:
    """What the sentiment scores mean: the fitted temperature and the dev calibration error before and after it
    (from the classifier's metrics.json), or a plain warning when the model was never calibrated."""
    cal = (metrics or {}).get("calibration")
    if not cal:
        return ("**This classifier is not calibrated**: its scores are the raw softmax of a small model, often near "
                "100% even when it is wrong. Read them as a ranking, not as a probability.")
    dev = cal["dev"]
    return (f"The scores are calibrated: the logits are divided by a temperature T = {cal['temperature']:.2f} fitted "
            f"on {cal['calibration']['n']:,} held-out SST-2 training sentences. On the SST-2 dev set "
            f"({dev['n']:,} sentences) the expected calibration error (the gap between confidence and accuracy, "
            f"over 15 bins) goes from {dev['ece_before']:.1%} to {dev['ece_after']:.1%}, and the mean confidence "
            f"from {dev['mean_confidence_before']:.1%} to {dev['mean_confidence_after']:.1%} at an accuracy of "
            f"{dev['accuracy']:.1%}. A bar on the diagonal below means that answers given with that confidence are "
            f"right that often.")


def about_sections(models: Models) -> dict:
    """Markdown for the About tab, built once at start-up from whatever exists: a summary card and the
    curves per model, the architecture, the comparison. No raw metrics, no machine paths."""
    out = {}
    reference = models.mlm if models.mlm.available else models.sentiment
    if reference.available:
        cfg = reference.config
        table, _ = parameter_table(reference.model)
        out["architecture"] = (
            f"Post-norm Transformer encoder, {cfg.num_hidden_layers} layers, hidden size {cfg.hidden_size}, "
            f"{cfg.num_attention_heads} heads, feed-forward {cfg.intermediate_size}, vocabulary "
            f"{cfg.vocab_size:,} (byte-level BPE), up to {cfg.max_length} tokens per input. Counts of the "
            f"{reference.title} model:\n\n{table}"
        )
    else:
        out["architecture"] = "Architecture: not available (no model loaded)."

    mlm_params = models.mlm.model.num_parameters() if models.mlm.available else None
    accuracy = find_accuracy(models.sentiment.extras.get("metrics")) if models.sentiment.available else None
    out["comparison"] = (
        "| | this project | MiniRoBERTa reference |\n|---|---:|---:|\n"
        f"| parameters (with the MLM head) | {_millions(mlm_params) if mlm_params else 'not available'} | 17.7M |\n"
        f"| SST-2 accuracy (validation) | {f'{accuracy:.1%}' if accuracy is not None else 'not available'} | 80% |"
    )
    for loaded in (models.mlm, models.sentiment):
        out[f"{loaded.key}_card"] = summary_card(loaded)
        out[f"{loaded.key}_curves"] = loaded.extras.get("curves")
    return out


# ----------------------------------------------------------------------------- model notes and summaries
def _number(d, *keys):
    """d[k1][k2]... when it is a real number (not a bool), else None."""
    for key in keys:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def _runs(loaded) -> list[dict]:
    """The training runs behind a model: its pretraining phases (phases.json), else its metrics.json."""
    phases = loaded.extras.get("phases")
    if isinstance(phases, list) and phases and all(isinstance(p, dict) for p in phases):
        return phases
    metrics = loaded.extras.get("metrics")
    return [metrics] if isinstance(metrics, dict) else []


def model_facts(loaded) -> dict:
    """What the model's metrics.json (and phases.json) say, read at run time; a key is missing when its
    figure is. Keys: parameters, train_tokens, train_minutes, wall_minutes, cores, device, data, and for an
    MLM mlm_accuracy / mlm_perplexity / mlm_rows (the release evaluation), eval_accuracy (the training
    script's own) and probe (train.fill_mask_probe's top1 / top5 / sentences), for a classifier
    dev_accuracy / dev_examples / imdb_accuracy / imdb_examples / train_examples and checks
    (train.evaluate.score_checks' dict)."""
    facts = {}
    if loaded.available:
        facts["parameters"] = loaded.model.num_parameters()
    metrics = loaded.extras.get("metrics") if isinstance(loaded.extras.get("metrics"), dict) else {}
    runs = _runs(loaded)
    tokens = [_number(r, "train_tokens") for r in runs]
    if runs and all(t is not None for t in tokens):
        facts["train_tokens"] = int(sum(tokens))
    for key, out in (("train_time_s", "train_minutes"), ("wall_time_s", "wall_minutes")):
        values = [_number(r, key) for r in runs]
        if runs and all(v is not None for v in values):
            facts[out] = sum(values) / 60
    hardware = metrics.get("hardware") if isinstance(metrics.get("hardware"), dict) else {}
    if _number(hardware, "cpu_count"):
        facts["cores"] = int(hardware["cpu_count"])
    if isinstance(hardware.get("device"), str):
        facts["device"] = hardware["device"]
    sources = metrics.get("corpus_sources")
    if isinstance(sources, list):
        facts["data"] = [dataset_name(s.get("source")) for s in sources if isinstance(s, dict) and s.get("source")]
    elif isinstance(metrics.get("train_data"), str):
        facts["data"] = [dataset_name(metrics["train_data"])]
    for key in ("accuracy", "perplexity"):
        if _number(metrics, "mlm", key) is not None:
            facts[f"mlm_{key}"] = _number(metrics, "mlm", key)
    if _number(metrics, "mlm", "max_length"):
        facts["mlm_rows"] = int(metrics["mlm"]["max_length"])
    for key in ("eval_accuracy", "dev_accuracy", "imdb_accuracy"):
        if _number(metrics, key) is not None:
            facts[key] = _number(metrics, key)
    for key in ("dev_examples", "imdb_examples", "train_examples"):
        if _number(metrics, key):
            facts[key] = int(metrics[key])
    checks = metrics.get("checks")
    if isinstance(checks, dict) and _number(checks, "n") and isinstance(checks.get("categories"), dict):
        facts["checks"] = checks
    # train.fill_mask_probe: everyday sentences with one expected word (the last phase is the shipped model)
    probe = metrics.get("fill_mask_probe") or (runs[-1].get("fill_mask_probe") if runs else None)
    if _number(probe, "sentences") and _number(probe, "top1") is not None and _number(probe, "top5") is not None:
        facts["probe"] = {k: float(probe[k]) for k in ("top1", "top5", "sentences")}
    return facts


def dataset_name(path) -> str:
    """A data set as a reader knows it, not where it lies on the training machine:
    "../shared/data/wikitext-2/wiki.train.tokens" -> "wikitext-2/wiki.train.tokens"."""
    parts = [p for p in str(path).replace("\\", "/").split("/") if p not in ("", ".", "..")]
    if "data" in parts:
        parts = parts[len(parts) - parts[::-1].index("data"):]
    return "/".join(parts[-2:]) or str(path)


def _pct(x: float) -> str:
    return f"{x:.1%}"


def example_failures(models: Models) -> dict:
    """The showcase examples the loaded models get wrong, checked by running them (at start-up):
    {"mlm": [(text, expected, [top words])], "sentiment": [(text, expected, label, probability)]}."""
    from .examples import FILL_MASK_EXPECTED, SENTIMENT_EXPECTED

    out = {"mlm": [], "sentiment": []}
    try:
        if models.mlm.available:
            for text, expected in FILL_MASK_EXPECTED.items():
                top = [r["token_str"].strip() for r in models.mlm.pipeline(text, top_k=5)]
                if expected not in top:
                    out["mlm"].append((text, expected, top))
        if models.sentiment.available:
            for text, expected in SENTIMENT_EXPECTED.items():
                best = models.sentiment.pipeline(normalize_for_classifier(text))[0]
                if best["label"] != expected:
                    out["sentiment"].append((text, expected, best["label"], float(best["score"])))
    except Exception:  # a note is not worth failing the start-up for
        log.exception("could not check the examples")
    return out


def model_note(models: Models, key: str, failures: dict | None = None) -> str:
    """One or two plain sentences next to a tab's result: how big the model is, how it scores on held-out
    data (from its metrics.json) and which of the tab's own examples it gets wrong (`example_failures`)."""
    loaded = models[key]
    if not loaded.available:
        return ""
    facts, failures = model_facts(loaded), failures or {}
    size = f"{_millions(facts['parameters'])} parameters" if "parameters" in facts else "a small model"
    if key == "mlm":
        trained = (f", pretrained from scratch on {facts['train_tokens'] / 1e6:.0f}M tokens"
                   if "train_tokens" in facts else ", pretrained from scratch")
        if "train_minutes" in facts:
            trained += f" in {facts['train_minutes'] / 60:.1f} hours"
            trained += f" on a {facts['cores']}-core CPU" if facts.get("device") == "cpu" and "cores" in facts else ""
        score = ""
        if "mlm_accuracy" in facts:
            score = (f" It guesses {_pct(facts['mlm_accuracy'])} of hidden words in held-out Wikipedia text "
                     "right (top-1)")
            score += f" in {facts['mlm_rows']}-token rows." if "mlm_rows" in facts else "."
        elif "eval_accuracy" in facts:
            score = f" It guesses {_pct(facts['eval_accuracy'])} of hidden words in held-out text right (top-1)."
        if "probe" in facts:
            n = int(facts["probe"]["sentences"])
            first, top5 = round(facts["probe"]["top1"] * n), round(facts["probe"]["top5"] * n)
            score += f" Of {n} everyday sentences, it puts the expected word first in {first} and in its top 5 in " \
                     f"{top5}."
        note = f"**About this model:** {size}{trained}, a small teaching model.{score} Expect plausible rather " \
               "than right answers"
        wrong = failures.get("mlm") or []
        if wrong:
            text, expected, top = wrong[0]
            note += (f": for “{md_escape(text)}” {md_escape(expected)} is not in its top 5 "
                     f"({', '.join(md_escape(w) for w in top[:3])}…)")
        return note + "."
    trained = (f", fine-tuned on {facts['train_examples']:,} SST-2 sentences" if "train_examples" in facts
               else ", fine-tuned on SST-2")
    scores = []
    if "dev_accuracy" in facts:
        scores.append(f"{_pct(facts['dev_accuracy'])} of the SST-2 dev sentences"
                      + (f" ({facts['dev_examples']:,})" if "dev_examples" in facts else ""))
    if "imdb_accuracy" in facts:
        scores.append(f"{_pct(facts['imdb_accuracy'])} of "
                      + (f"{facts['imdb_examples']:,} " if "imdb_examples" in facts else "")
                      + "IMDB reviews (longer, out of domain)")
    note = f"**About this model:** {size}{trained}, a small teaching model."
    if scores:
        note += f" It labels {' and '.join(scores)} right."
    checks = facts.get("checks")
    if checks:
        weak = sorted(((c.get("accuracy", 0), name, c) for name, c in checks["categories"].items()
                       if isinstance(c, dict)), key=lambda t: t[0])[:2]
        note += (f" Behaviour checks: {checks.get('right', 0)}/{int(checks['n'])} right; weakest: "
                 + ", ".join(f"{md_escape(str(name))} ({c.get('right', 0)}/{c.get('n', 0)})" for _, name, c in weak)
                 + ".")
    wrong = failures.get("sentiment") or []
    if wrong:
        note += " It gets " + ("this example" if len(wrong) == 1 else "these examples") + " wrong: " + "; ".join(
            f"“{md_escape(text)}” ({md_escape(label)}, {_pct(p)})" for text, _, label, p in wrong) + "."
    return note


def attention_hint(handlers: "Handlers", text: str, link: tuple[str, str]) -> str:
    """Where to look in the attention tab, found in the loaded model at start-up: the layer and head in
    which the first word of `link` ("it") gives the largest share of its attention to the second ("cat")."""
    try:
        tokens, attentions = handlers._attention_data("mlm", text)
    except Exception:
        return ""
    labels = [label.strip().lower() for label in tokens.labels]
    if link[0] not in labels or link[1] not in labels:
        return ""
    source, target = labels.index(link[0]), labels.index(link[1])
    weights = attentions[:, :, source, target]  # (L, nh)
    layer, head = np.unravel_index(int(np.argmax(weights)), weights.shape)
    return (f"In this model, layer {layer + 1}, head {head + 1} is where “{link[0]}” attends most to "
            f"“{link[1]}” ({_pct(float(weights[layer, head]))} of its attention; "
            f"{_pct(float(weights.mean()))} on average over all heads).")


def ablation_markdown(ablation: dict) -> str:
    """assets/masking-ablation/results.json as a table (or JSON), or a note that it is not there yet."""
    results = ablation.get("results")
    if results is None:
        return ("_The static-vs-dynamic masking ablation (assets/masking-ablation/results.json) is not available "
                "yet._")
    header = "### Ablation: pretraining with static vs dynamic masking\n\n"
    if isinstance(results, dict) and isinstance(results.get("arms"), dict):  # train.ablation's results.json
        try:
            return header + ablation_arms_markdown(results)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            log.warning("unexpected ablation results layout: %s", err)
    runs = None
    if isinstance(results, dict) and results and all(isinstance(v, dict) for v in results.values()):
        runs = list(results.items())  # {"static": {...}, "dynamic": {...}}
    else:
        listed = results if isinstance(results, list) else next(
            (v for v in results.values() if isinstance(v, list)), None) if isinstance(results, dict) else None
        if listed and all(isinstance(v, dict) for v in listed):  # [{"masking": "static", ...}, ...]
            runs = [(str(r.get("name", r.get("masking", r.get("run", i + 1)))), r) for i, r in enumerate(listed)]
    if runs:
        columns = list(dict.fromkeys(k for _, v in runs for k, x in _flatten(v)
                                     if not isinstance(x, (list, dict))))[:10]
        lines = ["| run | " + " | ".join(map(_md_cell, columns)) + " |", "|---" * (len(columns) + 1) + "|"]
        for name, values in runs:
            flat = dict(_flatten(values))
            lines.append(f"| {_md_cell(name)} | " + " | ".join(_md_cell(flat.get(c, "")) for c in columns) + " |")
        extra = ""
        if isinstance(results, dict) and not all(isinstance(v, dict) for v in results.values()):
            notes = {k: v for k, v in results.items() if not isinstance(v, (list, dict))}
            extra = "\n\n" + metrics_markdown(notes) if notes else ""
        return header + "\n".join(lines) + extra
    text = json.dumps(results, indent=2)[:4000]
    return header + "```json\n" + text + "\n```"


def _mean_std(arm: dict, key: str, percent: bool = False) -> str:
    mean, std = arm.get("mean", {}).get(key), arm.get("std", {}).get(key)
    if mean is None:
        return "–"
    scale, digits = (100, 1) if percent else (1, 3)
    text = f"{mean * scale:.{digits}f}" + (f" ± {std * scale:.{digits}f}" if std is not None else "")
    return text + (" %" if percent else "")


def ablation_arms_markdown(results: dict) -> str:
    """train.ablation's results.json: arm | seeds | MLM loss | MLM accuracy | the mask probe's training-row
    losses | SST-2 (mean ± std), the paper's Table 1 beside it, and the setup in one line."""
    arms = results["arms"]
    lines = ["| arm | seeds | held-out MLM loss | held-out MLM accuracy | training rows, mask trained on | "
             "training rows, fresh mask | SST-2 dev accuracy |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, arm in arms.items():
        lines.append(f"| {_md_cell(arm.get('label', name))} | {int(arm.get('n', 0))} | "
                     f"{_mean_std(arm, 'mlm_loss')} | {_mean_std(arm, 'mlm_accuracy', True)} | "
                     f"{_mean_std(arm, 'probe_seen_mask_loss')} | {_mean_std(arm, 'probe_fresh_mask_loss')} | "
                     f"{_mean_std(arm, 'sst2_accuracy', True)} |")
    setup = results.get("setup", {})
    init = setup.get("init")
    start = (f"the same warm start ({html.escape(str(init).replace(chr(92), '/'))})" if init and init != "random"
             else "the same model")
    note = ("Mean ± standard deviation over seeds; the two training-row columns are MLM losses on training rows "
            "under the mask trained on (static arms) and under fresh masks: their gap is what was memorised of "
            f"the masks. Every arm has {start}, seeds, data, token budget, held-out mask and SST-2 fine-tuning; "
            "only the masking of the training rows differs")
    if setup.get("parameters") and setup.get("train_tokens_per_run"):
        corpus = setup.get("corpus") or {}
        name = str(corpus.get("source") or corpus.get("file") or "the corpus").replace("\\", "/").rsplit("/", 1)[-1]
        note += (f": a {_millions(setup['parameters'])}-parameter encoder, {setup.get('epochs', 0):g} epochs over "
                 f"{setup.get('train_rows', 0):,} rows of {html.escape(name)} ({setup['train_tokens_per_run']:,} "
                 "tokens per run)")
    if setup.get("valid"):
        note += f". Held-out: {html.escape(str(setup['valid']).replace(chr(92), '/').rsplit('/', 1)[-1])}"
    note += "."
    if results.get("status") != "complete":
        note += f" **Partial results: {results.get('runs_done')} of {results.get('runs_planned')} runs.**"
    out = "\n".join(lines) + "\n\n" + note
    paper = results.get("paper")
    if isinstance(paper, dict) and paper.get("rows"):
        def num(v):
            return f"{v:.1f}" if isinstance(v, (int, float)) else "–"

        rows = ["| masking (paper) | our arm | SQuAD 2.0 F1 | MNLI-m | SST-2 |", "|---|---|---:|---:|---:|"]
        for r in paper["rows"]:
            ours = arms.get(r.get("ours"), {}).get("label", "–")
            rows.append(f"| {_md_cell(r.get('masking'))} | {_md_cell(ours)} | {num(r.get('squad2_f1'))} | "
                        f"{num(r.get('mnli_m_accuracy'))} | {num(r.get('sst2_accuracy'))} |")
        out += (f"\n\nFor reference, {_md_cell(paper.get('source', 'the RoBERTa paper'))} "
                f"({_md_cell(paper.get('model', 'BERT-base'))}; {_md_cell(paper.get('note', ''))}):\n\n"
                + "\n".join(rows))
    return out
