"""The Masking tab: what BERT's static masking (one fixed mask, or 10 cycling) and RoBERTa's dynamic masking
feed the model for one sentence, epoch by epoch; how much of it each scheme ever asks for; the MLM's answers
at the last epoch's targets; and the table that shows it all (sized for 128 tokens x 40 epochs)."""
from __future__ import annotations

import html

import numpy as np
import torch

from roberta.masking import (DUPE_FACTOR, KEPT, KEPT_FRACTION, MASK_FRACTION, MASKED, MLM_PROBABILITY,
                             NOT_SELECTED, OUTCOME_NAMES, RANDOM, RANDOM_FRACTION, DynamicMasker, StaticMasker)
from roberta.run_metrics import said_list

from .figures import expected_coverage
from .formatting import PART_NOTE, format_probability, md_escape, pct, piece_of, word_label
from .tokens_view import Tokens, token_text, word_spans

MASKING_TAB = "Masking"  # the tab's name (app.py), which the page's "Start here" line names

# the epoch table's and the plot's names: BERT's preprocessing flag (dupe_factor) said in words, the copies of the
# data it makes, each masked once
SCHEMES = {
    "static1": "BERT static, one fixed mask (1 masked copy of the data)",
    "static10": f"BERT static, {DUPE_FACTOR} masks cycling ({DUPE_FACTOR} masked copies of the data: BERT's "
                "dupe_factor)",
    "dynamic": "RoBERTa dynamic (new mask every epoch)",
}
# the tables' and notes' names (a phone's table column is narrow; the epoch table and the plot say what they are)
SHORT_NAMES = {"static1": "BERT static, one fixed mask", "static10": f"BERT static, {DUPE_FACTOR} masks cycling",
               "dynamic": "RoBERTa dynamic"}
# why a target is not always <mask> (the tab's intro, above the epochs that show the three outcomes)
TARGETS_WHY = (f"Of the ~{MLM_PROBABILITY:.0%} of tokens picked as targets, {MASK_FRACTION:.0%} show &lt;mask&gt;, "
               f"{RANDOM_FRACTION:.0%} a random token, {KEPT_FRACTION:.0%} themselves: fine-tuning never shows "
               "&lt;mask&gt;, and a model that cannot tell which words are targets must build a useful vector for "
               "every one.")
# a position counts the tokens from 0, the <s> the tokenizer adds (layers and heads count from 1: the header says so)
POSITION = "position (0 = <s>)"
MASKING_COLUMNS = ["scheme", "distinct masks", "positions ever a target", "coverage"]
PREDICTION_COLUMNS = ["scheme", POSITION, "original", "what happened", "model saw", "top-1 prediction",
                      "probability", "correct"]


def simulate_masking(tokenizer, ids: torch.Tensor, epochs: int, seed: int) -> dict:
    """What each scheme feeds the model for one sequence (example id 0), epoch by epoch."""
    maskers = {
        "static1": StaticMasker.from_tokenizer(tokenizer, seed=seed, dupe_factor=1),
        "static10": StaticMasker.from_tokenizer(tokenizer, seed=seed, dupe_factor=DUPE_FACTOR),
        "dynamic": DynamicMasker.from_tokenizer(tokenizer, seed=seed),
    }
    runs = {}
    for key, masker in maskers.items():
        if key == "dynamic":
            runs[key] = [masker(ids) for _ in range(epochs)]
        else:
            runs[key] = [masker(ids, [0], epoch) for epoch in range(epochs)]
    return runs


def _mask_of(batch) -> tuple:
    """What one epoch fed the model and asked of it: two epochs with the same key showed the same mask."""
    return tuple(batch.input_ids[0].tolist()), tuple(batch.outcome[0].tolist())


def _is_empty(batch) -> bool:
    """No token was picked: the model sees the sentence unchanged and is asked nothing (a short sentence's lot)."""
    return not bool((batch.outcome[0] != NOT_SELECTED).any())


def distinct_masks(batches: list) -> int:
    """How many different masks the epochs showed. Every empty mask (no token picked) is the same mask, the
    sentence unchanged, so it counts once however often it comes; so does any mask drawn twice."""
    return len({_mask_of(b) for b in batches})


def empty_epochs(runs: dict) -> dict[str, list[int]]:
    """Per scheme, the epochs (from 1) whose mask picked no token."""
    return {key: [e + 1 for e, b in enumerate(batches) if _is_empty(b)] for key, batches in runs.items()}


def maskable(tokens: Tokens) -> int:
    """How many of the sentence's positions can be a target: all but the special tokens (<s>, </s>)."""
    return sum(not s for s in tokens.special)


def masking_stats(tokens: Tokens, runs: dict) -> tuple[list[list], dict[str, list[float]]]:
    """Per scheme: a row (scheme, distinct masks, positions ever a target, coverage: "21.4%") and its coverage curve
    (the share of the sentence that has been a target, after each epoch). Distinct masks: `distinct_masks`, an
    empty mask counted once (the note under the epoch table says so when one was shown)."""
    n_eligible = maskable(tokens)
    stats, curves = [], {}
    for key, batches in runs.items():
        ever, curve = np.zeros(len(tokens.ids), dtype=bool), []
        for b in batches:
            ever |= (b.outcome[0] != NOT_SELECTED).numpy()
            curve.append(float(ever.sum()) / n_eligible)
        curves[key] = curve
        stats.append([SHORT_NAMES[key], distinct_masks(batches), f"{int(ever.sum())} of {n_eligible}",
                      pct(curve[-1])])
    return stats, curves


# the coverage table fits a 320 px phone: headers wrap between words, the epochs are numbers under "epoch", the
# cells padded less than Gradio pads a table's (its rule is more specific: !important)
COVERAGE_CSS = """<style>
.mk-coverage table{border-collapse:collapse;font-size:13px;margin:4px 0 0;max-width:100%}
.mk-coverage caption{text-align:left;font-size:12px;opacity:.8;padding:0 0 4px;caption-side:top}
.mk-coverage :is(th,td){padding:2px 6px !important;border-bottom:1px solid var(--border-color-primary,#d4d4d8);
  text-align:right;font-variant-numeric:tabular-nums}
.mk-coverage thead th{vertical-align:bottom;white-space:normal;overflow-wrap:normal;word-break:normal}
.mk-coverage td{white-space:nowrap}
@media (max-width:600px){.mk-coverage :is(th,td){padding:2px 3px !important;font-size:12px}}
</style>"""


def coverage_html(curves: dict[str, list[float]], tokens: Tokens) -> str:
    """The coverage plot as text (a closed table): after each epoch, the share of the sentence that each scheme
    has made a target (`masking_stats`' curves) and the share expected with a new mask every epoch, as the plot's
    dotted line."""
    epochs = len(next(iter(curves.values())))
    expected = expected_coverage(epochs)
    head = "".join(f'<th scope="col">{html.escape(SHORT_NAMES.get(key, key))}</th>' for key in curves)
    rows = "".join(f'<tr><th scope="row">{e + 1}</th>'
                   + "".join(f"<td>{pct(curve[e])}</td>" for curve in curves.values())
                   + f"<td>{pct(expected[e])}</td></tr>" for e in range(epochs))
    return (f'{COVERAGE_CSS}<details class="mk-coverage"><summary>The figure as text</summary><table><caption>'
            f"Positions ever a target after each epoch, as a share of the {maskable(tokens)} that can be one "
            '(special tokens never are)</caption><thead><tr><th scope="col">epoch</th>'
            f'{head}<th scope="col">expected, a new mask every epoch</th></tr></thead><tbody>{rows}</tbody></table>'
            "</details>")


# the page's views of the two tables (`data_markdown`): a number's column is right-aligned, the others left
NUMBER_COLUMNS = {"distinct masks", "positions ever a target", "coverage", POSITION, "probability"}
PREDICTIONS_SAID = "The MLM's top-1 prediction at every target of the last epoch:"


def data_markdown(columns: list[str], rows: list[list], said: str = "") -> str:
    """`masking_stats`' or `mlm_predictions`' rows as the page shows them: a Markdown table, as wide as its words
    (a Dataframe's columns, fixed shares of its box, wrapped "BERT static, one fixed mask" over four lines at
    1280 px), whose headers wrap between words on a phone and which scrolls sideways where it does not fit
    (demo/page.css's `.md table`); `said` above it. The API returns the rows themselves."""
    def cell(value) -> str:
        return "" if value is None else md_escape(str(value))

    head = "| " + " | ".join(cell(name) for name in columns) + " |"
    rule = "|" + "|".join("--:" if name in NUMBER_COLUMNS else "---" for name in columns) + "|"
    body = ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join([*([said, ""] if said else []), head, rule, *body])


def shown_token(tokenizer, token_id: int) -> str:
    """A token as the tables name it: the word without its leading space, part of a character by its bytes
    ("⟨byte 0xF0⟩ (part of a character)", not "�"), whitespace by its sign (`demo.formatting.word_label`)."""
    return word_label(token_text(tokenizer, token_id), piece_of(tokenizer, token_id))


def mlm_predictions(model, tokenizer, tokens: Tokens, runs: dict) -> list[list]:
    """Top-1 prediction of the MLM at every target of each scheme's last epoch (PREDICTION_COLUMNS)."""
    last = {key: batches[-1] for key, batches in runs.items()}
    device = next(model.parameters()).device
    inputs = torch.cat([b.input_ids for b in last.values()]).to(device)  # (3, T)
    labels = torch.cat([b.labels for b in last.values()]).to(device)  # (3, T): the original id at a target, -100 else
    targets = torch.cat([b.outcome for b in last.values()]) != NOT_SELECTED  # (3, T), where labels != -100
    # masked_only: only the N targets are projected onto the vocabulary, (N, V); every token is attended to,
    # a typed "<pad>" too, as the pipelines read it (the three rows have the same length: no padding)
    with torch.inference_mode():
        logits = model(inputs, torch.ones_like(inputs), labels=labels, masked_only=True).logits  # (N, V)
        best_p, best = logits.float().softmax(dim=-1).max(dim=-1)  # (N,), (N,) row-major over `targets`
        best_p, best = best_p.cpu(), best.cpu()
    found = {(r, c): i for i, (r, c) in enumerate(torch.nonzero(targets).tolist())}
    rows = []
    for row, (key, b) in enumerate(last.items()):
        positions = torch.nonzero(b.outcome[0] != NOT_SELECTED).squeeze(-1).tolist()
        if not positions:
            # a short sentence: no token was picked (each is, with probability MLM_PROBABILITY)
            rows.append([SHORT_NAMES[key], None, "–", "no token picked", "", "", None, ""])
        for pos in positions:
            p, pick = best_p[found[row, pos]], best[found[row, pos]]
            outcome = int(b.outcome[0, pos])
            rows.append([SHORT_NAMES[key], pos, tokens.labels[pos], OUTCOME_NAMES[outcome],
                         shown_token(tokenizer, int(b.input_ids[0, pos])), shown_token(tokenizer, int(pick)),
                         format_probability(float(p)), "✓" if int(pick) == int(tokens.ids[pos]) else "✗"])
    return rows


SAID = {MASKED: " (was {})", RANDOM: " (random; was {})", KEPT: " (kept, a target)"}  # screen-reader text
NONE_PICKED = "no token picked this time"
WHY_NONE = f"each token is picked with p = {MLM_PROBABILITY:g}, so a short sentence sometimes gets none"
# the note under the table says where that rule comes from: BERT's create_pretraining_data.py picks
# min(max_predictions_per_seq, max(1, round(15% of the tokens))), so a row of BERT's own always has a target
BERT_PICKS = (f"BERT's own code picks {MLM_PROBABILITY:.0%} of a row's tokens, rounded, at least one (and at most its "
              "max_predictions_per_seq); this demo, like Hugging Face's collator, picks each token on its own")

# Each rule's why is said here, not in the CSS, which is sent with every run's table:
# col.mk-epoch: "epoch 40" in bold and the cell's padding, with a little to spare (the digits' widths differ by font).
# .mk-wrap before th and td: it outranks Gradio's `.prose td` (a border in the text's colour, its own padding),
# as the phone's rule for the table and its rows does (each epoch was a dark box in a dark box).
# td i: a word's pieces unpadded ("ninet" "een" with a pixel each side read as two words); the targets padded.
# td direction and isolate: tokens in reading order whatever their script (Arabic pieces are not reordered across
# their neighbours).
# .mk-1/2/3: light backgrounds keep dark text in a dark theme too; a line under each kind tells them apart without
# colour.
# i[title]::after: the original under a target, on hover and on focus (a tap on a phone, Tab on a keyboard); in
# dark mode a grey box with an edge (the near-black one vanished on the dark page: white text over the next line).
# .mk-scroll focused: the keyboard's one tab stop is the table's box (not every target: 40 epochs make thousands),
# and while it (or the later epochs' summary) has the focus, every target shows its original in line. Their rings
# lighter in dark mode (the light mode's indigo was 2.4:1 there), as page.css's.
# --mk-line: the lines in the theme's border colour (a light grey was a bright grid on the dark page).
# table.mk-table: no margin (Gradio's .prose table rule's 16 px parted the first epochs from the later ones' bar).
# .mk-later: the epochs after the first few (`epoch_tables`), a native disclosure whose summary is a line as wide
# as the table.
# On a phone (max-width:700px) the page scrolls, not the box: a box inside it showed one epoch and caught the swipes.
# .mk-special: a special token typed in the sentence ("<mask>"), as typed in every epoch and never a target, in a
# dashed box (the text's colour, in either theme) as the Tokens tab draws special tokens.
# .mk-more: "more epochs below" at the box's foot while the box can still scroll down (at 1280 px the default's
# epochs 9-12, where BERT's masks come round again, were below it with nothing to say so); of no height, its line
# drawn upwards over the last row shown, so that it never changes what the box holds; a browser without
# scroll-state queries shows none, as before; since the later epochs are behind a disclosure (`epoch_tables`), it
# shows once that is open.
MASKING_CSS = """<style>
.mk-wrap{--mk-line:var(--border-color-primary,#d4d4d8)}
.mk-scroll{max-height:min(640px,70vh);overflow:auto;border:1px solid var(--mk-line)}
.mk-table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:13px;line-height:1.9}
.mk-wrap table.mk-table{margin:0}
.mk-wrap .mk-table :is(th,td){border:1px solid var(--mk-line);padding:4px 6px;vertical-align:top;text-align:left;
  overflow-wrap:anywhere}
.mk-scroll .mk-table th,.mk-more span,.mk-later>summary{background:var(--background-fill-secondary,#f4f4f5);
  color:var(--body-text-color,#18181b)}
.mk-scroll .mk-table thead th{position:sticky;top:0;z-index:1}
.mk-scroll .mk-table tbody th{white-space:nowrap;font-weight:600}
.mk-table col.mk-epoch{width:calc(8.2ch + 14px)}
.mk-table th:first-child{white-space:nowrap;overflow-wrap:normal}
.mk-table td i{font-style:normal;border-radius:3px;padding:0;color:inherit}.mk-table td i[class]{padding:1px}
.mk-table td{direction:ltr}.mk-table td>*{unicode-bidi:isolate}
.mk-wrap .mk-1,.mk-wrap .mk-table td i.mk-1{background:#fca5a5;color:#18181b;font-weight:600}
.mk-wrap .mk-2,.mk-wrap .mk-table td i.mk-2{background:#fdba74;color:#18181b;text-decoration:underline dashed}
.mk-wrap .mk-3,.mk-wrap .mk-table td i.mk-3{background:#93c5fd;color:#18181b;text-decoration:underline dotted}
.mk-special{border:1px dashed}
.mk-copy{font-size:11px;opacity:.75;margin-right:.4em}
.mk-none{display:block;font-size:12px;font-style:italic;line-height:1.5}
.mk-table .sr{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.mk-table i[title]{position:relative;cursor:help}
.mk-table i[title]:focus{outline:none}
.mk-table i[title]:is(:hover,:focus)::after{content:attr(title);position:absolute;left:0;top:100%;z-index:2;
  background:#18181b;color:#fff;padding:0 5px;border-radius:3px;font-size:12px;font-weight:400;line-height:1.6;
  white-space:nowrap;text-decoration:none;pointer-events:none}
.dark .mk-table i[title]::after{background:#374151;border:1px solid #9ca3af}
.mk-scroll:focus-visible{outline:2px solid #4338ca;outline-offset:2px}
.mk-scroll{container-type:scroll-state}
.mk-more{position:sticky;bottom:0;z-index:1;height:0;visibility:hidden}
.mk-more span{position:absolute;left:0;right:0;bottom:0;text-align:center;font-size:12px;font-weight:600;
  line-height:1.9;border-top:1px solid var(--mk-line)}
@container scroll-state(scrollable: bottom){.mk-more{visibility:visible}}
.mk-scroll:is(:focus-visible,:has(>.mk-later>summary:focus-visible)) .mk-table i[title]::after{
  content:" (" attr(title) ")";position:static;background:none;border:0;color:inherit;padding:0;font-size:11px}
.mk-later>summary{cursor:pointer;padding:6px 8px;font-size:13px;font-weight:600;border:1px solid var(--mk-line);
  border-top:none}
.mk-later>summary:focus-visible{outline:2px solid #4338ca;outline-offset:-2px}
.dark .mk-wrap :focus-visible{outline-color:#a5b4fc}
.mk-legend span{margin-right:1em;padding:1px 6px;border-radius:3px;display:inline-block}
@media (max-width:700px){
.mk-scroll{max-height:none}
.mk-more{display:none}
.mk-table,.mk-table tbody,.mk-table tr,.mk-table td,.mk-table tbody th{display:block;width:auto}
.mk-table colgroup,.mk-table thead{display:none}
.mk-wrap :is(.mk-table,.mk-table tr){border:none}
.mk-table td::before{display:block;font-size:11px;font-weight:600;opacity:.75}
.mk-table td:nth-of-type(1)::before{content:"BERT static, one fixed mask"}
.mk-table td:nth-of-type(2)::before{content:"BERT static, 10 masks cycling"}
.mk-table td:nth-of-type(3)::before{content:"RoBERTa dynamic, a new mask every epoch"}
}
</style>"""


def _legend() -> str:
    """The colours' key, with each outcome's share."""
    return (f'<div class="mk-legend"><span class="mk-1">&lt;mask&gt; ({MASK_FRACTION:.0%} of targets)</span>'
            f'<span class="mk-2">random token ({RANDOM_FRACTION:.0%})</span><span class="mk-3">unchanged, still a '
            f'target ({KEPT_FRACTION:.0%})</span><span style="border:1px solid var(--mk-line)">not selected '
            f'({1 - MLM_PROBABILITY:.0%} of tokens)</span></div>')


def typed_specials(tokens: Tokens) -> list[int]:
    """The positions of the special tokens typed in the sentence ("<mask>"): they cover some of its text, where
    the <s> and </s> the tokenizer adds cover none. The maskers never pick one (`roberta.masking`)."""
    return [pos for pos, (special, (start, end)) in enumerate(zip(tokens.special, tokens.offsets))
            if special and end > start]


def cut_note(tokens: Tokens) -> str:
    """Above the table, when the text was longer than the model reads: only its first tokens are masked, said where
    the results are (a toast alone went in 10 s, and the counts beside it, "126 of 126", read as the whole text)."""
    if not tokens.truncated:
        return ""
    words = sum(1 for special in tokens.special if not special)
    return (f'<p class="mk-special-note">Your text is longer than the model reads: only its first {words} tokens '
            f"are shown and masked here ({len(tokens.ids)} with &lt;s&gt; and &lt;/s&gt;), and every count on this "
            "tab is of them.</p>")


def special_note(tokens: Tokens) -> str:
    """Above the table, when the sentence holds a special token typed in it: it stays as typed and is never a
    target (so the counts of targets leave it out)."""
    names = list(dict.fromkeys(tokens.labels[pos] for pos in typed_specials(tokens)))
    if not names:
        return ""
    one = len(names) == 1
    quoted = said_list([f"“{html.escape(name)}”" for name in names])
    return (f'<p class="mk-special-note">{quoted} typed in the sentence '
            f'{"is a special token" if one else "are special tokens"}'
            f' (in a dashed box): {"it stays" if one else "they stay"} as typed in every epoch and '
            f'{"is" if one else "are"} never a target, so “positions ever a target” leaves {"it" if one else "them"} '
            'out.</p>')


def _shown_positions(tokens: Tokens) -> tuple[list[int], list[str]]:
    """The positions a cell shows (every token but the <s> and </s> the tokenizer adds), and the space before
    each, so that lines wrap between words: before a regular token that starts a word (`Tokens.word_start`), and
    before a typed special token, or the token after one, that starts a whitespace-separated word of the text."""
    typed = set(typed_specials(tokens))
    shown = [pos for pos, special in enumerate(tokens.special) if not special or pos in typed]
    starts = {start for start, _ in word_spans(tokens.text)}
    gaps = []
    for i, pos in enumerate(shown):
        if i == 0:
            gap = False
        elif pos in typed or shown[i - 1] in typed:
            gap = tokens.offsets[pos][0] in starts
        else:
            gap = tokens.word_start[pos]
        gaps.append(" " if gap else "")
    return shown, gaps


def _none_picked(first: bool) -> str:
    """A cell's line when its mask picked no token: why, the first time in the table; then just that it happened."""
    said = f"{NONE_PICKED}: {WHY_NONE}" if first else NONE_PICKED
    return f'<span class="mk-none">({said})</span>'


def _where_empty(key: str, epochs: list[int], total: int, distinct: int) -> str:
    """Which epochs of one scheme had no target (listed when few), which of BERT's copies, and what it does to
    the count of distinct masks."""
    which = f"epoch{'s' * (len(epochs) > 1)} {', '.join(map(str, epochs))}" if len(epochs) <= 6 else (
        f"{len(epochs)} of {total} epochs")
    if key == "static10":
        copies = sorted({(e - 1) % DUPE_FACTOR + 1 for e in epochs})
        which += f", mask{'s' * (len(copies) > 1)} {', '.join(map(str, copies))} of {DUPE_FACTOR}"
    counted = f"{distinct} distinct masks below, one of them empty" if distinct > 1 else "1 mask below: the empty one"
    return f"{SHORT_NAMES[key]}: {which} ({counted})"


def empty_note(runs: dict) -> str:
    """Under the table, when some epoch's mask picked no token: which, and how "distinct masks" counts them."""
    empty = {key: epochs for key, epochs in empty_epochs(runs).items() if epochs}
    if not empty:
        return ""
    where = "; ".join(_where_empty(key, epochs, len(runs[key]), distinct_masks(runs[key]))
                      for key, epochs in empty.items())
    return (f'<p class="mk-empty-note"><b>Epochs without a target.</b> {WHY_NONE[0].upper()}{WHY_NONE[1:]} '
            f'({BERT_PICKS}): the model then sees it unchanged and is asked nothing. Here: {where}. Every empty mask '
            f'is the same mask (the sentence unchanged), so “distinct masks” counts it once, however often it comes '
            f'(as it counts a mask drawn twice).</p>')


def _comes_round(epochs: int) -> str:
    """Where BERT's masks come round again, the point of the table (": ... at epoch 11"), when they do."""
    return (f": BERT's {DUPE_FACTOR} masks start again at epoch {DUPE_FACTOR + 1}" if epochs > DUPE_FACTOR
            else "")


def more_below(epochs: int) -> str:
    """The cue at the foot of the epoch table's box while more epochs are below it (MASKING_CSS shows it only
    then): how many epochs there are, and where BERT's masks come round again."""
    return (f'<div class="mk-more" aria-hidden="true"><span>↓ More epochs below, {epochs} in all'
            f'{_comes_round(epochs)}</span></div>')


# the epochs the table shows before its disclosure (`masking_table`): BERT's one mask repeating, its 10 masks and
# RoBERTa's changing. On a phone each epoch is a card a screen tall, and the default 12 made the tab 10,461 px.
FIRST_EPOCHS = 3


def _epoch_rows(head: str, rows: list[str]) -> str:
    """One of the epoch tables: the same columns and headers whichever epochs it holds."""
    return (f'<table class="mk-table"><colgroup><col class="mk-epoch"><col><col><col></colgroup><thead><tr>'
            f'<th>epoch</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def epoch_tables(head: str, rows: list[str]) -> str:
    """The first FIRST_EPOCHS rows, then the others in a closed <details> (a native disclosure: the keyboard and a
    screen reader open it) whose summary says which epochs it holds and where BERT's masks come round again."""
    shown = _epoch_rows(head, rows[:FIRST_EPOCHS])
    if len(rows) <= FIRST_EPOCHS:
        return shown
    which = (f"Epoch {len(rows)}" if len(rows) == FIRST_EPOCHS + 1
             else f"Epochs {FIRST_EPOCHS + 1}–{len(rows)}")
    return (f'{shown}<details class="mk-later"><summary>{which}{_comes_round(len(rows))}</summary>'
            f'{_epoch_rows(head, rows[FIRST_EPOCHS:])}</details>')


def masking_table(tokenizer, tokens: Tokens, runs: dict) -> str:
    """An HTML table, one row per epoch, one column per scheme; every token escaped and coloured by outcome. The
    first epochs show, the others are one click away (`epoch_tables`), inside a box that scrolls on a computer.

    Sized for 128 tokens x 40 epochs x 3 schemes (15,360 tokens): each token is a bare `<i>` (styled by one
    CSS rule), and only the prediction targets carry a class, a title (the original token, which hover and a tap
    show) and tabindex="-1" (a tap focuses it; the keyboard's one stop is the table's box, which then shows every
    original in line). A mask that picked no token says so in its cell. A special token typed in the sentence
    ("<mask>") shows in every cell as typed, in a dashed box (`special_note` says why above the table)."""
    labels = tokens.labels
    escaped = [html.escape(label, quote=True) for label in labels]
    replaced: dict[int, str] = {}  # token id -> how a masked or random replacement shows

    def shown(token_id: int) -> str:
        if token_id not in replaced:
            replaced[token_id] = html.escape(shown_token(tokenizer, token_id).removesuffix(PART_NOTE))  # a chip
        return replaced[token_id]

    head = "".join(f"<th>{html.escape(name)}</th>" for name in SCHEMES.values())
    shown_positions, gaps = _shown_positions(tokens)
    typed = set(typed_specials(tokens))
    rows, explained = [], False
    epochs = len(next(iter(runs.values())))
    for e in range(epochs):
        cells = []
        for key in SCHEMES:
            b = runs[key][e]
            ids, outcomes = b.input_ids[0].tolist(), b.outcome[0].tolist()
            parts = []
            for gap, pos in zip(gaps, shown_positions):
                outcome = outcomes[pos]
                if pos in typed:  # never picked: as typed
                    parts.append(f'{gap}<i class="mk-special">{escaped[pos]}</i>')
                elif outcome == NOT_SELECTED:
                    parts.append(f"{gap}<i>{escaped[pos]}</i>")
                else:
                    text = escaped[pos] if outcome == KEPT else shown(ids[pos])
                    # what the colour says, for a screen reader (the title is not read out)
                    said = SAID[outcome].format(escaped[pos])
                    parts.append(f'{gap}<i class="mk-{outcome}" tabindex="-1" title="{escaped[pos]}">{text}'
                                 f'<b class="sr">{said}</b></i>')
            if _is_empty(b):
                parts.append(_none_picked(first=not explained))
                explained = True
            copy = {"static1": "the one mask", "static10": f"mask {e % DUPE_FACTOR + 1} of {DUPE_FACTOR}",
                    "dynamic": "new mask"}[key]
            cells.append(f'<td><span class="mk-copy">{copy}</span> {"".join(parts)}</td>')
        rows.append(f"<tr><th>epoch {e + 1}</th>{''.join(cells)}</tr>")
    note = ('<p>Hover over or tap a coloured token to see the original, which the model must predict there (with '
            'the keyboard, Tab to the table: every original shows). '
            'Static masking repeats its masks (BERT duplicated its data 10 times with different masks, so over 40 '
            'epochs each mask was seen 4 times); dynamic masking draws a new one every time the sentence is fed to '
            'the model.</p>')
    return (f'{MASKING_CSS}<div class="mk-wrap">{_legend()}{cut_note(tokens)}{special_note(tokens)}'
            f'<div class="mk-scroll" role="region" tabindex="0" '
            f'aria-label="The sentence epoch by epoch, one column per scheme">{epoch_tables(head, rows)}'
            f'{more_below(epochs)}</div>{empty_note(runs)}{note}</div>')
