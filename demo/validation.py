"""Input checks and error plumbing of the app's handlers.

Every check raises `gr.Error` with a plain message; `user_errors` turns the pipelines' `ValueError`s into the
same and any other failure into a generic one (the traceback goes to the server log, never to the UI);
`keep_results` is the UI's version of a handler, which shows the message next to the input and keeps the
previous results. Warnings (`warning`) are popups; on the page they are held until the run's results are kept
(`held_warnings`, `show_warnings`): a run dropped for a newer one says nothing.
"""
from __future__ import annotations

import functools
import html
import logging
import math
import re
import unicodedata
from contextlib import contextmanager
from contextvars import ContextVar

import gradio as gr

import roberta
from roberta.run_metrics import said_list

from .formatting import LINE_BREAK_RE, VISIBLE_RE, short_text, typed_word

log = logging.getLogger(__name__)
_HELD: ContextVar[list | None] = ContextVar("held_warnings", default=None)  # the page's run's warnings, if held

MAX_CHARS = 200_000  # longer texts are refused outright; a shorter one is cut to what the tab reads (the
# model's window; the Sentiment tab reads LONG_TEXT_TOKENS, in windows)
MAX_TOP_K = 20
MAX_TARGETS = 100  # candidate words scored at most
MAX_WORD_CHARS = 40  # a word typed in (a candidate word, an Embeddings word): a longer one is a paste, not a word
WORD_SEPARATORS_RE = re.compile(r"[,;\n]")  # a box of several words: commas, semicolons or new lines between
MAX_MASKS = roberta.pipelines.MAX_MASKS
MAX_EPOCHS = 40
# The Masking tab's largest seed. The maskers take any whole number (folded into 64 bits) and a browser's number
# box sends whole numbers exactly up to 2**53 - 1: any bound below that would do, and this is int32's largest.
MAX_SEED = 2**31 - 1
# The BaseExceptions that are no error of a request (the others, such as pyo3's PanicException when a Rust library
# panics, are answered as errors: one that passed through left the request unanswered)
EXITS = (KeyboardInterrupt, SystemExit, GeneratorExit)
MASK, ALT_MASK = roberta.pipelines.MASK, roberta.pipelines.ALT_MASK  # "<mask>", and BERT's "[MASK]" read as it
MASK_RE = re.compile(f"{re.escape(MASK)}|{re.escape(ALT_MASK)}")
# <MASK>, [mask], < mask >, and in fullwidth brackets (＜mask＞, ［mask］: a Chinese or Japanese keyboard's)
NEAR_MASK_RE = re.compile(r"[<＜]\s*mask\s*[>＞]|[\[［]\s*mask\s*[\]］]|&lt;mask&gt;", re.IGNORECASE)
# Kept of the invisible characters below: the zero-width joiner and non-joiner (they join an emoji's parts, shape
# Indic and Arabic script), the tags of a flag emoji (🏴 + tags: England's), the Arabic signs that show (number
# sign, end of ayah...: category Cf too), and the format controls that shape a script (the Mongolian vowel
# separator, Egyptian hieroglyph joiners, shorthand and musical-notation controls)
_KEPT = {"\u200c", "\u200d", "\u180e", *map(chr, range(0xE0020, 0xE0080)),
         *"\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u0890\u0891\u08e2\U000110bd\U000110cd",
         *map(chr, [*range(0x13430, 0x13456), *range(0x1BCA0, 0x1BCA4), *range(0x1D173, 0x1D17B)])}
# Control characters (C0, C1) and the format characters that show nothing (Unicode category Cf: zero-width
# space, word joiner, byte-order mark, soft hyphen, direction marks and overrides...): invisible, they change
# the model's tokens and so its answers ("capital\u200b of <mask>" read Azerbaijan, not France), and are
# removed from every text and word typed in (`clean_text`), as if never typed. So are lone surrogates (category
# Cs: half of a character, which JSON can send as "\ud800"): no character at all, and UTF-8 has none to read
# (replaced, each was a "?" the model read). Every Cf and Cs character is in planes 0, 1 and 14. The controls
# that are whitespace (tab, the line breaks, U+001F) are not among them: `clean_text` reads them as whitespace
# (removed, a page break between two sentences glued them into one word).
INVISIBLE_RE = re.compile("[" + "".join(re.escape(c) for c in map(chr, [*range(0x20000), *range(0xE0000, 0xE1000)])
                                      if unicodedata.category(c) in ("Cc", "Cf", "Cs") and not c.isspace()
                                      and c not in _KEPT) + "]")
UNIT_SEPARATOR = "\x1f"  # whitespace to Python (str.isspace), between two fields: read as a space
TRUNCATED_WARNING = ("The text is longer than the {n} tokens the model reads; only the first {n} tokens were "
                     "used.")
# The sentiment tab reads a long text whole, in overlapping windows of the model's length (roberta.pipeline),
# up to this many tokens (about 11 windows of 128 tokens: a long review), so one request stays quick.
LONG_TEXT_TOKENS = 1024
WINDOWS_NOTE = ("The text is longer than the {n} tokens the model reads at once: its score averages the logits of {k} "
                "overlapping windows of {n} tokens. The colours show at most the first window's words.")
WINDOWS_CUT_NOTE = " Only its first {limit:,} tokens were read."


class WordedError(ValueError):
    """A ValueError the app worded for its user: `user_errors` shows it as it stands (never re-cased: it may
    begin with what the user typed, a repo id such as "assets")."""


def fail(message: str, field: str | None = None):
    """A plain message for the user (raised: `raise fail(...)` reads as what it does); `field`: the input it is
    about ("Layer", "Head"), for a page that shows that input's messages in a box of its own (`keep_results`)."""
    error = gr.Error(message, print_exception=False)
    error.field = field
    return error


def warning(message: str) -> None:
    """A popup beside the results (`gr.Warning`; outside Gradio, a Python warning), as written for the API's
    clients; inside `held_warnings` (the page's events) held until the run's results are kept."""
    held = _HELD.get()
    if held is None:
        gr.Warning(message)
    else:
        held.append(message)


@contextmanager
def held_warnings():
    """Holds the warnings (`warning`) raised inside in the list it yields, for `show_warnings` once the caller
    knows the results are kept; inside another hold it yields None and the outer one holds them."""
    if _HELD.get() is not None:
        yield None
        return
    held = []
    token = _HELD.set(held)
    try:
        yield held
    finally:
        _HELD.reset(token)


def show_warnings(held: list | None) -> None:
    """The held warnings as the page's popups, which render HTML: escaped (a "<MASK>" in one is text)."""
    for message in held or ():
        gr.Warning(html.escape(message, quote=False))


def user_errors(fn):
    """Turn ValueError (user-facing messages of the pipelines and of our checks) into gr.Error, and any
    other exception (a BaseException too, but `EXITS`) into a generic gr.Error; log the traceback server-side. Gradio
    renders error messages as HTML, so any "<" or "&" in them (from the user's input) is escaped."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except gr.Error as err:
            raise fail(html.escape(str(err.message), quote=False), getattr(err, "field", None)) from None
        except ValueError as err:
            message = str(err)
            # a library's sentence ("top_k must be..."), whose first word is no path or repo id it names
            if not isinstance(err, WordedError) and message.split(" ", 1)[0].isalpha():
                message = message[:1].upper() + message[1:]
            raise fail(html.escape(message, quote=False)) from None
        except EXITS:
            raise
        except BaseException:
            log.exception("unexpected error in %s", fn.__name__)
            raise fail("Something went wrong while processing this input. Please try another text.") from None

    return wrapper


def plain_errors(fn):
    """`fn` for the API's clients: the messages `user_errors` escaped for the page (which renders them as HTML)
    as written ("write <mask>", not "write &lt;mask&gt;")."""

    @functools.wraps(fn)
    def endpoint(*args):
        try:
            return fn(*args)
        except gr.Error as err:
            raise fail(html.unescape(err.message), getattr(err, "field", None)) from None

    return endpoint


def error_html(message: str) -> str:
    """A message shown next to the input (already HTML-escaped by `user_errors`), with a note for a screen reader
    at its end: the results shown are still the last valid input's. The note is hidden (display: none) unless
    demo/page.css shows it, visually hidden, where that is true: in an error box whose results `keep_results`
    kept (and the page dims), when there are results; a model box's refusal (`model_choice.refused`) and a message
    that is a result itself (Tokens' merge by merge) never show it. demo/page.js ties the message to its field
    (aria-invalid, aria-describedby) while it shows."""
    return (f'<div class="input-error" role="alert">⚠️ {message}<span class="input-error-stale"> The results shown '
            "are still those of the last valid input.</span></div>")


def keep_results(fn, n_outputs: int, keep_undrawn: bool = False, others: tuple = ()):
    """The UI's version of a handler: its outputs plus an update of the error box next to the input. On a
    plain error (`gr.Error`) the outputs stay as they were (`gr.skip()`) and the box shows the message, so a
    typo does not wipe the last results into red "Error" badges; a success hides the box. The public API
    endpoints call the handler itself and get the error as before. `keep_undrawn`: an output the handler left
    as None (a view it did not draw, e.g. a hidden attention sub-tab) is not touched either, so a slow event
    that finishes late cannot blank a view another event has just drawn. `others`: the fields (a set of names,
    as `fail` takes them) of the tab's other error boxes, updated after the own one: a success hides them too
    (their messages were about inputs this run has just read as valid, or replaced), and a message about one
    of their fields shows in that box instead, the own box hidden (its input is fine); any other message
    leaves them as they are."""

    @functools.wraps(fn)
    def ui(*args):
        hidden = gr.update(value="", visible=False)
        with held_warnings() as held:  # shown here, unless the event (demo.wiring's `Wiring.guarded`) holds them
            try:
                out = fn(*args)
            except gr.Error as err:
                show_warnings(held)
                shown = gr.update(value=error_html(err.message), visible=True)
                about = [getattr(err, "field", None) in fields for fields in others]
                return (*[gr.skip()] * n_outputs, hidden if any(about) else shown,
                        *[shown if its else gr.skip() for its in about])
        show_warnings(held)
        out = out if isinstance(out, tuple) else (out,)
        if keep_undrawn:
            out = tuple(gr.skip() if value is None else value for value in out)
        return (*out, *[hidden] * (1 + len(others)))

    return ui


def read_sliders(fn, bounds: list):
    """The UI's version of `fn` reading its sliders as the page will show them: a slider's number box can hold a
    typed value outside the slider's range (50 for a top-k of 1-20) until it loses focus, when the slider
    clamps it; the page reads the value clamped too, so the results match the box. An emptied box becomes the
    slider's minimum on blur: read so too (an error about the empty box stayed beside the minimum's box).
    `bounds`: (minimum, maximum) per argument that comes from a slider, None for the others (and for arguments
    past the list). Anything else but a finite number is passed on for the handler's message; the public API is
    not wrapped."""

    def clamp(value, limits):
        if limits is not None and (value is None or value == ""):
            return limits[0]
        # an int is finite however large (math.isfinite(10**400) raised OverflowError): clamped like any other
        if limits is None or isinstance(value, bool) or not isinstance(value, (int, float)) or (
                isinstance(value, float) and not math.isfinite(value)):
            return value
        return min(max(value, limits[0]), limits[1])

    @functools.wraps(fn)
    def ui(*args):
        return fn(*(clamp(value, limits) for value, limits in zip(args, bounds)), *args[len(bounds):])

    return ui


def require_visible(text: str) -> str:
    """`text`, unless it is nothing but whitespace and zero-width characters."""
    if not VISIBLE_RE.search(text):
        raise fail("The text is empty: type a sentence first.")
    return text


def clean_text(text, name: str = "The text", required: bool = True) -> str:
    """The text as the model will read it: every line break as "\\n" (CR LF and CR, as an API client may send
    them, and the line and page breaks of copied text: vertical tab, form feed, NEL, U+001C-U+001E, U+2028 and
    U+2029; `LINE_BREAK_RE`), U+001F as a space, invisible control and format characters and lone surrogates
    removed (`INVISIBLE_RE`), and then composed (Unicode NFC: "e" and a combining acute accent are "é", as most
    text writes it; `composes`); `name` in the messages (singular or plural: "The candidate words"); `required`:
    an empty text (nothing visible) is refused."""
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise fail(f"{name} must be a string, got {type(text).__name__}.")
    if len(text) > MAX_CHARS:
        raise fail(f"{name} must be at most {MAX_CHARS:,} characters long; {len(text):,} is too long.")
    text = INVISIBLE_RE.sub("", LINE_BREAK_RE.sub("\n", text).replace(UNIT_SEPARATOR, " "))
    text = unicodedata.normalize("NFC", text)
    if len(text) > MAX_CHARS:  # NFC writes a few characters as several (U+1D160, a musical note, as three)
        raise fail(f"{name} must be at most {MAX_CHARS:,} characters long; in Unicode's usual form (NFC), which "
                   f"writes some characters as several, it is {len(text):,}.")
    return require_visible(text) if required else text


def composes(text: str) -> bool:
    """Whether `clean_text` changes characters of `text` to Unicode's usual form (NFC): mostly characters typed in
    parts, such as a letter and a combining accent (as macOS file names write "é"), which the model reads as the
    one they make; also a character NFC writes otherwise: the ohm sign as Ω, a Devanagari qa as ka and nukta."""
    return not unicodedata.is_normalized("NFC", INVISIBLE_RE.sub("", text))


def parse_int(value, name: str, lo: int, hi: int, also: str = "") -> int:
    """A whole number in [lo, hi] from an int, a whole float or a numeric string, which may begin with `name` in any
    case ("layer 2", as the Head picker's "head 2" reads); `also`: what else the box takes, said in the messages
    (" or “average”"). A message is about the field `name` (`fail`)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        # a browser's number box sends nothing (None) when cleared, and for a number too large for it (1e400)
        held = " (or holds a number too large for it)" if value is None else ""
        raise fail(f"{name} is empty{held}: enter a whole number between {lo} and {hi}.", name)
    try:
        if isinstance(value, bool):
            raise ValueError
        digits = isinstance(value, str) and re.fullmatch(rf"\s*(?:{re.escape(name)}\s*)?([+-]?\d+)\s*", value, re.I)
        if digits:
            value = int(digits[1])  # digits as typed: "99999999999999999999" is not the float 1e20
        number = value if isinstance(value, int) else float(value)  # an int as it is: 10**400 is too large a float
        if isinstance(number, float):
            if not number.is_integer():
                raise ValueError
            number = int(number)
    except (TypeError, ValueError, OverflowError):
        got = f"“{short_text(value)}”" if isinstance(value, str) else short_text(str(value))  # text quoted as typed
        raise fail(f"{name} must be a whole number between {lo} and {hi}{also}, got {got}.", name) from None
    if not lo <= number <= hi:
        raise fail(f"{name} must be between {lo} and {hi}{also}, got {number_as_said(number)}.", name)
    return number


def number_as_said(number: int) -> str:
    """A whole number as a message quotes it: its digits up to 20 of them, else in powers of ten ("1e+20": a
    browser's number box sends 99999999999999999999 as the float 1e20, whose 21 digits were cut to
    "1000000000000000000…", a number nobody typed)."""
    digits = str(abs(number))
    if len(digits) <= 20:
        return str(number)
    mantissa = f"{digits[0]}.{digits[1:3]}".rstrip("0").rstrip(".")
    return f"{'-' if number < 0 else ''}{mantissa}e+{len(digits) - 1}"


def parse_head(value, num_heads: int) -> int | None:
    """None for the average of heads, else a 1-based head number."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "average", "mean", "avg", "all")):
        return None
    return parse_int(value, "Head", 1, num_heads, " or “average”")


def split_words(text: str) -> list[str]:
    """The words of a box that takes several (the fill-mask tab's candidates, the word map's), separated by
    commas, semicolons or new lines ("France; Germany", and a word a line, are two words, as "France, Germany"
    is), each stripped, blanks dropped."""
    return [w.strip() for w in WORD_SEPARATORS_RE.split(text) if w.strip()]


def one_word(word: str) -> str:
    """`word`, unless it is longer than MAX_WORD_CHARS characters (a paste): ValueError in plain words."""
    if len(word) > MAX_WORD_CHARS:
        raise ValueError(f"“{word[:MAX_WORD_CHARS]}…” is longer than {MAX_WORD_CHARS} characters: type one word.")
    return word


def candidate_words(targets, vocabulary=None) -> list[str]:
    """The fill-mask tab's optional candidate words (`split_words`), cleaned as a text is (`clean_text`), each
    at most MAX_WORD_CHARS characters. A word may start with "␣" or "Ġ", as the answers' table and the
    vocabulary write a word's space: it is left out, "Ġ" where the word with it is an entry of `vocabulary` (the
    model's tokenizer; without one, always: `typed_word`), as the mask's place chooses the spaced form."""
    if targets is not None and not isinstance(targets, str):
        raise fail(f"The candidate words must be a string, got {type(targets).__name__}.")
    typed = split_words(clean_text(targets, "The candidate words", required=False))
    words = [bare for word in typed if (bare := typed_word(word, vocabulary))]
    if typed and not words:  # "␣" alone named no word: the answers would read as the candidates' (a stray one goes)
        raise fail(f"“{typed[0]}” is only the sign of a space: type a word after it (“{typed[0]}France”), or the "
                   "word alone.")
    if len(words) > MAX_TARGETS:
        raise fail(f"There are {len(words):,} candidate words; at most {MAX_TARGETS} are allowed.")
    for word in words:
        one_word(word)
    if special := [w for w in dict.fromkeys(words) if w in roberta.tokenizer.SPECIAL_TOKENS or w == ALT_MASK]:
        one = len(special) == 1
        raise fail(f"{said_list([f'“{w}”' for w in special])} {'is a special token' if one else 'are special tokens'}"
                   f", not {'a word' if one else 'words'}: leave {'it' if one else 'them'} out of the candidates.")
    return words


def count_masks(text: str, warn: bool = True) -> int:
    """How many masks the fill-mask text holds: at least one, at most MAX_MASKS. A mask written otherwise
    (<MASK>, [mask], < mask >) is no mask: an error when there is no other, else a warning (`warn`) that only
    the others are predicted."""
    n_masks = len(MASK_RE.findall(text))
    near = [m.group() for m in NEAR_MASK_RE.finditer(text) if m.group() not in (MASK, ALT_MASK)]
    how = f"write {MASK} exactly (lower case, no spaces) or {ALT_MASK}"
    if n_masks == 0 and near:
        raise fail(f"“{near[0]}” is not read as a mask: {how}.")
    if near and warn:
        warning(f"“{near[0]}” is not read as a mask, so only the {n_masks} written {MASK} "
                f"{'is' if n_masks == 1 else 'are'} predicted: {how}.")
    if n_masks == 0:
        raise fail("There is no mask in the text: write <mask> where a word should be predicted, e.g. "
                   "“Paris is the capital of <mask>.”")
    if n_masks > MAX_MASKS:
        raise fail(f"The text has {n_masks} masks; at most {MAX_MASKS} are allowed.")
    return n_masks


def warn_truncated(max_length: int) -> None:
    warning(TRUNCATED_WARNING.format(n=max_length))


def windows_note(max_length: int, windows: int, cut: bool) -> str:
    """What to know of a long text read in `windows` windows (`cut`: beyond LONG_TEXT_TOKENS, the rest was not
    read): said with the answer it qualifies."""
    return WINDOWS_NOTE.format(n=max_length, k=windows) + (WINDOWS_CUT_NOTE.format(limit=LONG_TEXT_TOKENS)
                                                           if cut else "")
