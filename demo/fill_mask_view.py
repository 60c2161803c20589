"""The fill-mask tab's views: every mask's predictions with readable probabilities and bars, the completed
sentence, and the per-mask `gr.Label` values of the API."""
from __future__ import annotations

import html
import re

from .formatting import (SPACE_LABEL, bar, format_exact_probability, format_log_probability, format_probability,
                         piece_of, prediction_labels, readable, reads_as_is, token_label, word_label)
from .training_counts import counts_css, counts_details, seen_cell
from .validation import MASK, MASK_RE, MAX_MASKS

# Where a mask and the whitespace before it start; the look-behind keeps the pattern from being tried again
# at every position of a long whitespace run (which made `\s*<mask>` quadratic)
MASK_WITH_SPACE_RE = re.compile(rf"(?<!\s)\s*(?:{MASK_RE.pattern})")


FILL_MASK_CSS = """<style>
.fm-view{display:flex;flex-direction:column;gap:12px;container-type:inline-size}
.fm-mask :is(h2,h3){margin:0 0 4px;font-size:14px}
.fm-mask table.fm-table{display:table;border-collapse:collapse;width:100%;font-size:14px;border:0;margin:0}
.fm-mask tr,.fm-mask td,.fm-mask th{border:0 !important;background:transparent !important}
.fm-mask th.fm-word{font-weight:400;text-align:left;padding:2px 6px}
.fm-mask td{padding:2px 6px;vertical-align:middle}
.fm-mask .fm-word{white-space:nowrap;max-width:12em;overflow:hidden;text-overflow:ellipsis}
.fm-mask :is(.fm-cand,.fm-glued){white-space:normal;overflow-wrap:anywhere;min-width:7em;
  max-width:16em}  /* a long word breaks, a short one never */
.fm-mask .fm-label{white-space:normal}
.fm-mask :is(.fm-cand,.fm-glued) small{display:block;opacity:.75}
.fm-mask td.fm-track{width:55%;min-width:40px}
.fm-mask td.fm-score{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.fm-mask thead th{font-size:12px;font-weight:400;opacity:.75;text-align:left;padding:0 6px}
.fm-mask .fm-seen{font-size:12px;opacity:.8;text-align:left;white-space:nowrap;font-variant-numeric:tabular-nums}
.fm-mask .fm-kind{white-space:nowrap}
/* a narrow box: each answer's count on a line of its own under it, the whole width (4 columns do not fit). The
   box's width, not the screen's: from about 720 px the page puts this view in one of two columns, 340-480 px wide
   up to 1180 px, where the wide table stuck out of the column and its bars shrank to 10 px */
@container (max-width:560px){
  .fm-mask table.fm-table:has(td.fm-seen),.fm-mask table:has(td.fm-seen) tbody{display:block;padding:0}
  .fm-mask table:has(td.fm-seen) thead{display:none}
  .fm-mask table:has(td.fm-seen),.fm-mask table:has(td.fm-seen) :is(tbody,tr,th,td){margin:0 !important}
  .fm-mask table:has(td.fm-seen) tr{display:grid;grid-template-columns:7.5em 1fr auto;align-items:center;
    padding:0 !important}
  .fm-mask td.fm-seen{grid-column:1/-1;white-space:normal;padding:0 6px 4px}
  .fm-mask td.fm-seen::before{content:'in the pretraining text: '}}
.fm-bar{display:block;height:12px;border-radius:3px;background:#6366f1;min-width:2px}
/* forced colours (Windows High Contrast) drop backgrounds: the bar in the text's colour, or it vanished */
@media (forced-colors:active){.fm-bar{forced-color-adjust:none;background:CanvasText}}
.fm-note{font-size:12px;opacity:.75;margin:2px 0 0}
.fm-tokens :is(h2,h3){margin:0 0 4px;font-size:14px}
.fm-strip{display:flex;flex-wrap:wrap;gap:6px;font-family:ui-monospace,monospace;font-size:13px}
.fm-w{display:inline-flex;flex-wrap:wrap;max-width:100%}
/* the chips' borders, and the dashed line that joins a word's pieces (their only visual tie), at 3:1 or more
   against the chip and the page, in either theme (a translucent border was 1.6-1.8:1) */
.fm-tok{padding:1px 5px;border:1px solid #6366f1;background:rgba(99,102,241,.10)}
.dark .fm-tok{border-color:#818cf8}
.fm-w .fm-tok:first-of-type{border-radius:4px 0 0 4px}.fm-w .fm-tok:last-of-type{border-radius:0 4px 4px 0}
.fm-w .fm-tok:only-of-type{border-radius:4px}.fm-w .fm-tok+.fm-tok{border-left-style:dashed}
.fm-tok.fm-special{opacity:.8}
.fm-sr{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.fm-tok.fm-masked{background:#dc2626;color:#fff;border-color:#dc2626;opacity:1}
/* what a score's and a shared row's hover says (`exact`): read by a screen reader, and shown in line while the
   table has the focus (Tab, a tap or a click on it) */
.fm-exact{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.fm-mask table.fm-table:focus{outline:none}
.fm-mask table.fm-table:focus-visible{outline:2px solid #4338ca;outline-offset:2px}
.dark .fm-mask table.fm-table:focus-visible{outline-color:#a5b4fc}
.fm-mask table.fm-table:focus .fm-exact{position:static;display:block;width:auto;height:auto;overflow:visible;
  clip-path:none;white-space:normal;font-size:12px;font-weight:400}
.fm-exact>span{white-space:nowrap}  /* "p = 1.23456%," and "ln p = −4.39" each whole */
""" + counts_css("fm") + "\n</style>"


def predictions_html(per_mask: list[list[dict]], candidates: list[str] | None = None, tokens=None,
                     heading: str = "h2", tokenizer=None, counts=None) -> str:
    """The fill-mask answers as a person reads them: per mask, each prediction with its probability
    (`format_probability`; the exact value and ln p on hover, and in `exact` text, which a screen reader reads
    and the table shows in line while it has the focus: a keyboard's Tab, a tap) and a bar scaled to the top
    prediction of that mask, so the ranking shows even when every probability is small; then, given `tokens`
    (`demo.tokens_view.Tokens`), the text as the model reads it (`tokens_html`). `heading`: the element of
    each part's heading (the page's title is the h1; "h3" inside a comparison, whose models are the h2s). A prediction
    that is whitespace or part of a character reads as a label (`demo.formatting.word_label`: "␣", "⟨byte 0xE6⟩ (part
    of a character)"; its bytes are named given the model's `tokenizer`). Given `counts`
    (`demo.training_counts.TrainingCounts` of the model's vocabulary), a last column says how often the pretraining
    text held each answer (`answer_seen_cell`). Given `tokens`, a predicted word piece without a space before it, at a
    mask with one, says that it ends the word before (`ends_the_word_before`: "row" after "Seth " reads "Sethrow"),
    where its row alone would read as a word of its own."""
    spaces = None if tokens is None else mask_spaces(tokens.text)
    blocks = []
    for i, row in enumerate(per_mask):
        top = max((float(r["score"]) for r in row), default=0.0) or 1.0
        lines, in_full = [], []
        for r, word in zip(row, prediction_labels(row, tokenizer)):
            p = float(r["score"])
            if r.get("candidates"):  # the user's words, and how they were scored when not as one token
                words, how = candidate_label(r)
                hover = every = ""  # a shared row names all its words on hover, and in its `exact` text
                if len(r["candidates"]) > 1:
                    hover = f' title="{html.escape(", ".join(r["candidates"]))}"'
                    every = exact(f"all {len(r['candidates'])}: {', '.join(r['candidates'])}", whole=False)
                note = f"<small>{html.escape(how)}</small>" if how else ""
                cell = f'<th scope="row" class="fm-word fm-cand"{hover}>{html.escape(words)}{note}{every}</th>'
            elif spaces is not None and ends_the_word_before(r["token_str"], spaces[i]):  # "Seth" + "row"
                cell = (f'<th scope="row" class="fm-word fm-glued">{html.escape(word)}'
                        f'<small>{GLUED_NOTE}</small></th>')
            else:  # a label ("⟨byte 0xE6⟩ (part of a character)") may take two lines, a word is cut with "…"
                kind = "" if reads_as_is(r["token_str"]) else " fm-label"
                cell = f'<th scope="row" class="fm-word{kind}">{html.escape(word)}</th>'
            if counts is not None:
                seen, said = answer_seen_cell(r, counts, tokenizer)
                in_full.append(said)
            else:
                seen = ""
            values = (f"p = {format_exact_probability(p)}", f"ln p = {format_log_probability(p)}")
            lines.append(f'<tr>{cell}<td class="fm-track">{bar(p / top, "fm-bar")}</td>'
                         f'<td class="fm-score" title="{", ".join(values)}">'
                         f'{format_probability(p)}{exact(*values)}</td>{seen}</tr>')
        what = "your candidate words, all of them" if candidates else f"top {len(row)} of the vocabulary"
        head = ("" if counts is None else '<thead><tr><th scope="col">answer</th><th scope="col" colspan="2">'
                'probability</th><th scope="col" class="fm-seen">in the pretraining text</th></tr></thead>')
        details = counts_details(in_full, "fm") if counts is not None else ""
        # the table takes the focus (one Tab stop; a tap), which shows every `exact` text in line
        blocks.append(f'<div class="fm-mask"><{heading}>&lt;mask&gt; {i + 1} <small>({what})</small></{heading}>'
                      f'<table class="fm-table" tabindex="0" aria-label="&lt;mask&gt; {i + 1}: the answers">{head}'
                      f'<tbody>{"".join(lines)}</tbody></table>{details}</div>')
    note = ("Probabilities over the whole vocabulary; bars are scaled to the top answer of each mask. Hover a "
            "score, or focus its table (Tab, or a tap), for the exact value and its log-probability.")
    if len(per_mask) > 1:  # "movie" at one mask and "shelf" at the other were never scored together: said first
        note = ("Each mask is predicted on its own, with the other masks still masked: the completed sentence "
                "joins separate guesses, and no probability here is that of any two masks together. " + note)
    if counts is not None:
        note += (" “In the pretraining text”: how often the text the model was pretrained on holds that token "
                 "(every document counted once; pretraining read it many times over), and in which kind of text it "
                 "is commoner, per token of each (hover, or open “in full”, for every count): a model knows a word "
                 "about as well as its text showed it.")
    if candidates:
        note += (" A candidate that is not one token of the vocabulary is scored by its first piece, as in "
                 "transformers (its row says so); candidates that share that piece share one row and one score.")
    if tokens is not None:
        blocks.append(tokens_html(tokens, heading, counts))
    return f'{FILL_MASK_CSS}<div class="fm-view">{"".join(blocks)}<p class="fm-note">{note}</p></div>'


GLUED_SHORT = "ends the word before"
GLUED_NOTE = f"no space before it: it {GLUED_SHORT}"


def ends_the_word_before(token_str: str, space: str) -> bool:
    """True for a predicted token that starts with a letter or digit, not a space, at a mask that has whitespace
    before it (`space`, from `mask_spaces`): filled in, it joins the word before ("Seth <mask>" with "row" reads
    "Sethrow")."""
    return bool(space) and token_str[:1].isalnum()


def exact(*parts: str, whole: bool = True) -> str:
    """What a hover says, as text, its `parts` separated by commas: a screen reader reads it, and it shows in line
    while its table has the focus (`FILL_MASK_CSS`), each part on one line if `whole`; hidden from sight
    otherwise."""
    said = ", ".join(f"<span>{html.escape(part)}</span>" if whole else html.escape(part) for part in parts)
    return f'<span class="fm-exact"> ({said})</span>'


# what hovering a special chip says (the Tokens tab explains them, three tabs later)
SPECIAL_SAID = {"<s>": "<s>: the start of every text, added by the tokenizer",
                "</s>": "</s>: the end of every text, added by the tokenizer"}


def tokens_html(tokens, heading: str = "h2", counts=None) -> str:
    """The text as the model reads it: one chip per token, the pieces of one word side by side (a dashed line
    between them), special tokens dimmed and each mask in red. A word the tokenizer met rarely comes in
    pieces (" barked": " b" + "arked"), and the model has to know it from them. A long word (a URL, a text without
    spaces, as Japanese is written) wraps between its chips instead of running off the edge. Hovering <s> or </s>
    says what it is (`SPECIAL_SAID`), and the caption what "␣" stands for. Given `counts`
    (`demo.training_counts.TrainingCounts`), a chip's hover says how often the pretraining text holds its token, and
    so does a closed <details> under the chips, for a keyboard, a phone or a screen reader (each token once)."""
    words: list[list[str]] = []
    said: dict[int, str] = {}  # token id -> its count, said
    last_end = None  # where the last token in the text ended (None after <s>)
    for label, special, (start, end), piece, token_id in zip(tokens.labels, tokens.special, tokens.offsets,
                                                             tokens.pieces, tokens.ids):
        kind = " fm-masked" if piece == MASK else " fm-special" if special else ""
        if counts is not None and not special:
            said.setdefault(token_id, counts.sentence(token_id, readable(piece)))  # the token, its space: "␣b"
        hover = SPECIAL_SAID.get(label) if special else said.get(token_id) if counts is not None else None
        seen = f' title="{html.escape(hover)}"' if hover else ""
        chip = f'<span class="fm-tok{kind}"{seen}>{html.escape(label)}</span>'
        outside = special and end <= start  # <s>, </s>: not in the text
        # the same word: no whitespace since the last token ended (the bytes of one character share their
        # span); a token of whitespace alone starts the word after it
        gap = "" if last_end is None else tokens.text[last_end:start]
        if last_end is not None and not outside and not piece.isspace() and not any(c.isspace() for c in gap):
            words[-1].append(chip)
        else:
            words.append([chip])
        last_end = None if outside else max(end, last_end or 0)
    read = f"{len(tokens.ids)} tokens" + (", the first that fit: the rest is cut" if tokens.truncated else "")
    # a word in pieces says so to a screen reader too (the borders that join its chips are not read out)
    strip = "".join(f'<span class="fm-w">{"".join(chips)}'
                    + (f'<b class="fm-sr"> (one word in {len(chips)} pieces)</b>' if len(chips) > 1 else "")
                    + "</span>" for chips in words)
    items = "".join(f"<li>{html.escape(line)}</li>" for line in said.values())
    in_full = (f'<details class="fm-counts fm-tok-counts"><summary>Each token’s count in the pretraining text '
               f"<small>(what a chip’s hover says)</small></summary><ul>{items}</ul></details>" if said else "")
    return (f'<div class="fm-tokens"><{heading}>How the model reads it <small>({read}; the pieces of one word '
            f'sit together; {SPACE_LABEL} marks a space, which a word\'s first token carries (“{SPACE_LABEL}b”; the '
            f'chips leave it out); the Tokens tab shows the whole cut)'
            f'</small></{heading}><div class="fm-strip">{strip}</div>{in_full}</div>')


def answer_seen_cell(result: dict, counts, tokenizer=None) -> tuple[str, str]:
    """The "in the pretraining text" cell of a prediction, its token's count there ("128k · 130× commoner in movie
    reviews", the second part on a line of its own on a phone; every count on hover), and what its hover says
    (the token named as the Tokens tab names it, "␣movie"; its vocabulary entry read from `tokenizer`). A
    candidate word scored by its first piece gets "–": the piece's count says nothing of the word."""
    words = result.get("candidates")
    if words and (len(words) > 1 or words[0] != result["token_str"].strip()):
        said = (f"“{', '.join(words)}”: scored by {'its' if len(words) == 1 else 'their shared'} first piece, whose "
                "count says nothing of how often the text holds the word")
        return f'<td class="fm-seen" title="{html.escape(said)}">–</td>', said
    token_id = int(result["token"])
    label = token_label(result["token_str"], piece_of(tokenizer, token_id))
    return seen_cell(counts, token_id, "fm", label), counts.sentence(token_id, label)


SHOWN_SHARING = 5  # candidate words a shared row names (all of them on hover)


def candidate_label(result: dict) -> tuple[str, str]:
    """A candidate row's label: the user's word(s) scored by `result` (its "candidates"), and, when that is not
    simply the word as one token, how it was scored, in parentheses (`how_scored`)."""
    words, how = how_scored(result)
    return words, f"({how})" if how else ""


def how_scored(result: dict) -> tuple[str, str]:
    """The user's word(s) scored by `result` (its "candidates"; `listed_words` when several), and, when that is not
    simply the word as one token, how it was scored: by its first piece, or by a piece several words share."""
    words, piece = result["candidates"], result["token_str"].strip()
    if not piece:  # "Ġ" alone, as before a character that has no piece of its own with a space
        shown = ", a lone space"
    elif "\ufffd" in piece:  # a piece of a multi-byte character decodes to U+FFFD
        shown = ", a part of a character"
    else:
        shown = f" ‘{piece}’"
    if len(words) == 1:
        return words[0], ("" if words[0] == piece else f"scored by its first piece{shown}")
    return listed_words(words), f"these {len(words)} words share one first piece{shown}, so one score"


def listed_words(words: list[str]) -> str:
    """Candidate words that share one piece, as their row and heading name them: the first SHOWN_SHARING, then how
    many more ("a, b, c, d, e and 35 more")."""
    listed = ", ".join(words[:SHOWN_SHARING])
    return listed + (f" and {len(words) - SHOWN_SHARING} more" if len(words) > SHOWN_SHARING else "")


def mask_spaces(text: str) -> list[str]:
    """Per mask, the whitespace before the word that fills it, as the model reads it: what the mask absorbs
    (`<mask>` strips the space on its left; the model reads "of\\n<mask>" as "of <mask>"), "" after a non-space
    ("foot<mask>", "(<mask>)"), and a space at the start of the text, where the model's own top answers are words
    after a space too (" France" for "<mask> is the capital of France.", not "France"). A candidate word takes its
    leading-space ("Ġ") form where there is some; the completed sentence drops the space that would open the
    text (`completed_sentence`)."""
    return [" " if match.start() == 0 else match.group()[:len(match.group()) - len(match.group().lstrip())]
            for match in MASK_WITH_SPACE_RE.finditer(text)]


def fill_text(fill: str, piece: str | None = None) -> str:
    """What the completed sentence shows for a mask's fill: the word itself when it reads as text (" Paris"), else
    after the whitespace it starts with its label (`token_label`): "␣" for a space, "⟨U+2009 thin space⟩",
    " ⟨byte 0xE6⟩ (part of a character)" (the bytes named given `piece`, the token's vocabulary entry)."""
    if reads_as_is(fill):
        return fill
    if not fill.strip():
        return token_label(fill, piece)
    return fill[:len(fill) - len(fill.lstrip())] + word_label(fill, piece)


def prediction_fill(result: dict, tokenizer=None) -> str:
    """The completed sentence's fill for a prediction of the vocabulary (`fill_text` of its token), the bytes of
    part of a character named given the model's `tokenizer`."""
    return fill_text(result["token_str"], piece_of(tokenizer, result["token"]))


def completed_sentence(text: str, fills: list[str]) -> list[tuple[str, str | None]]:
    """The text with each mask (and the space it absorbs) replaced by its top prediction, highlighted; a fill
    that is whitespace or part of a character shown by its label (`fill_text`), not blank or "�". The space a
    word comes with goes before its highlight, with the text: inside it, a line that wrapped there began with a
    blank in the highlight ("␣tea")."""
    parts, last = [], 0
    for i, match in enumerate(MASK_WITH_SPACE_RE.finditer(text)):
        if i >= len(fills):
            break
        shown = fill_text(fills[i])
        word = shown.lstrip() if fills[i].strip() else shown  # a fill of whitespace alone is shown by its label
        space = shown[:len(shown) - len(word)] if match.start() else ""  # no space opens the text
        parts.append((text[last:match.start()] + space, None))
        parts.append((word, f"<mask> {i + 1}"))
        last = match.end()
    parts.append((text[last:], None))
    return [(t, c) for t, c in parts if t]


def mask_labels(per_mask: list[list[dict]], tokenizer=None, spaces: list[str] | None = None) -> list[dict | None]:
    """One `gr.Label` value ({word: probability}) per mask slot, MAX_MASKS of them, None when unused. Words are
    named as the view names them (`predictions_html`; the bytes of part of a character given a `tokenizer`); the
    user's candidate words all of them, with what their row says of how they were scored when not simply as one
    token (`candidate_label`): "france (scored by its first piece ‘f’)", the probability of that piece. Given
    `spaces` (`mask_spaces`), a word piece that ends the word before says so, as its row does: "row (ends the word
    before)"."""
    labels = []
    for i, row in enumerate(per_mask):
        scores = {}
        for r, word in zip(row, prediction_labels(row, tokenizer)):
            name = word
            if r.get("candidates"):  # the user's candidate word(s)
                name = " ".join(filter(None, [", ".join(r["candidates"]), candidate_label(r)[1]]))
            elif spaces is not None and ends_the_word_before(r["token_str"], spaces[i]):
                name += f" ({GLUED_SHORT})"
            while name in scores:  # two tokens that still read the same
                name += "\u200b"
            scores[name] = float(r["score"])
        labels.append(scores)
    return labels + [None] * (MAX_MASKS - len(labels))


COMPARE_CSS = """<style>
.fm-compare{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:12px 24px}
.fm-compare>section{min-width:0}
.fm-compare h2.fm-model{margin:0 0 6px;font-size:15px;overflow-wrap:anywhere}
.fm-compare-summary{margin:0 0 8px}
</style>"""


def comparison_html(text: str, columns: list[tuple[str, list[list[dict]], str, object]]) -> str:
    """One text through several fill-mask models, side by side (one column each, stacked on a phone): a line
    per mask that says each model's top answer and its probability, named as that model's answers table names it
    (`top_answers`), then each model's own predictions view. `columns`: (the model's title, its predictions per
    mask, its `predictions_html`, its tokenizer or None)."""
    lines, spaces = [], mask_spaces(text)
    for i in range(max(len(per_mask) for _, per_mask, _, _ in columns)):
        tops = [(title, per_mask[i], tokenizer) for title, per_mask, _, tokenizer in columns
                if i < len(per_mask) and per_mask[i]]
        space = spaces[i] if i < len(spaces) else " "  # a mask past the text shown (cut at 300 characters)
        answers = [f"{html.escape(title)} “{html.escape(word)}” ({'; '.join(filter(None, [score, how]))})"
                   for (title, _, _), (word, score, how) in zip(tops, top_answers(tops, space))]
        lines.append(f"&lt;mask&gt; {i + 1}: " + "; ".join(answers))
    sections = "".join(f'<section aria-label="{html.escape(title)}"><h2 class="fm-model">{html.escape(title)}</h2>'
                       f"{view}</section>" for title, _, view, _ in columns)
    return (f'{COMPARE_CSS}<p class="fm-compare-summary">Top answers for “{html.escape(text)}”: '
            f'{"<br>".join(lines)}</p><div class="fm-compare">{sections}</div>')


def top_answers(tops: list[tuple[str, list[dict], object]], space: str = "") -> list[tuple[str, str, str]]:
    """Per model (its title, its predictions at one mask, its tokenizer or None), its top answer as its answers
    table names it: (the word(s), the probability, how a candidate word was scored when not as one token). A
    token of the vocabulary reads as its row does (`prediction_labels`: "␣The" where "The" is also in the table,
    the bytes of part of a character named), and where two models' top tokens still read the same but are not the
    same token (" Paris" after a space, "Paris" glued to what precedes it), the one with the space says so. At a
    mask with whitespace before it (`space`), a word piece that ends the word before says so, as its row does."""
    words, scores, hows, tokens = [], [], [], []
    for _, row, tokenizer in tops:
        top = row[0]
        word, how = how_scored(top) if top.get("candidates") else (prediction_labels(row, tokenizer)[0], "")
        if not top.get("candidates") and ends_the_word_before(top["token_str"], space):
            how = GLUED_SHORT
        words.append(word)
        scores.append(format_probability(float(top["score"])))
        hows.append(how)
        tokens.append(None if top.get("candidates") else top["token_str"])  # the user's words say how instead

    def another_token_reads_so(i: int) -> bool:
        return any(words[j] == words[i] and tokens[j] not in (None, tokens[i]) for j in range(len(words)))

    spaced = [token is not None and token[:1].isspace() and not word.startswith(SPACE_LABEL)
              and another_token_reads_so(i) for i, (word, token) in enumerate(zip(words, tokens))]
    words = [SPACE_LABEL + word if space else word for word, space in zip(words, spaced)]
    return list(zip(words, scores, hows))
