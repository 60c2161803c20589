"""The Masking tab's views (demo/masking_view.py) and its coverage figure: the epoch column's width, epochs whose
mask picked no token, targets a keyboard or a tap can reach, and a legend readable on a phone."""
import html
import re

import pytest
import torch

from demo import figures, masking_view, tokens_view
from demo.validation import MAX_EPOCHS
from roberta.masking import MLM_PROBABILITY, NOT_SELECTED

SHORT = "a cat"  # two or three tokens: each epoch's mask picks none of them with probability >= 0.85^3 = 0.61
LONG = "The old man follows the river every day and our team sees a small bird near the house at night."
TARGET = re.compile(r'<i class="mk-(\d)"([^>]*)>(.*?)</i>')


def _runs(models, text, epochs, seed=0):
    tokenizer = models.mlm.tokenizer
    tokens = tokens_view.tokenize(tokenizer, text, 64)
    return tokenizer, tokens, masking_view.simulate_masking(tokenizer, torch.tensor([tokens.ids]), epochs, seed)


def _cells(table):
    """The table's cells, row by row: [[static1, static10, dynamic], ...]."""
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr><th>epoch \d+</th>(.*?)</tr>", table)]


# ----------------------------------------------------------------------------- the epoch column
# (that "epoch 40" fits its column on one line, in two fonts: tests/test_app_browser.py, test_masking_example)
def test_table_labels_every_epoch_up_to_the_maximum(models):
    tokenizer, tokens, runs = _runs(models, LONG, MAX_EPOCHS)
    table = masking_view.masking_table(tokenizer, tokens, runs)
    assert '<col class="mk-epoch">' in table
    assert [int(n) for n in re.findall(r"<tr><th>epoch (\d+)</th>", table)] == list(range(1, MAX_EPOCHS + 1))


def test_the_box_says_more_epochs_are_below_and_where_berts_masks_repeat(models):
    """At 1280 px the epoch table's box showed epochs 1-7 of the default 12, and nothing said there was more: epochs
    11-12, where BERT's 10 masks come round again, were out of sight. A line at the box's foot says so, while the
    box can still scroll down (MASKING_CSS: a scroll-state query; a phone, whose page scrolls, shows none)."""
    for epochs in (12, 6):
        tokenizer, tokens, runs = _runs(models, LONG, epochs)
        table = masking_view.masking_table(tokenizer, tokens, runs)
        box = re.search(r'<div class="mk-scroll"[^>]*>(.*?)</div>\s*(?:<p|</div>)', table, re.S)[1]
        cue = re.fullmatch(r'.*</table>(?:</details>)?<div class="mk-more" aria-hidden="true"><span>(.*?)</span>',
                           box, re.S)
        assert cue, box[-300:]  # inside the box, after the table: sticky at its foot
        copies = {int(n) for n in re.findall(r"mask (\d+) of 10", table)}
        repeats = epochs > len(copies)  # an epoch shows a mask already seen
        assert cue[1].startswith(f"↓ More epochs below, {epochs} in all")
        assert ("masks start again at epoch 11" in cue[1]) == repeats
    css = table.split("</style>", 1)[0]
    assert ".mk-more{position:sticky;bottom:0" in css and "visibility:hidden" in css
    assert "@container scroll-state(scrollable: bottom){.mk-more{visibility:visible}}" in css
    assert re.search(r"@media \(max-width:700px\)\{.*\.mk-more\{display:none\}", css, re.S)


def _epochs_of(html_part):
    return [int(n) for n in re.findall(r"<tr><th>epoch (\d+)</th>", html_part)]


@pytest.mark.parametrize("case", ["the default 12", "the most", "one past the first", "the first", "one"])
def test_the_first_epochs_show_and_the_rest_are_behind_a_closed_disclosure(models, case):
    """On a phone every epoch was a tall card, the box around them let the page scroll (a box inside the page caught
    the swipes): the default 12 epochs made the page 10,461 px tall with the shipped models, the MLM's predictions
    9.5 screens down. The first FIRST_EPOCHS epochs show; the others wait in a native, closed <details> (a keyboard
    and a screen reader open it), whose summary says which epochs it holds and where BERT's masks come round again.
    Its table has the same columns and headers: every epoch is still there, in order."""
    first = masking_view.FIRST_EPOCHS
    assert 1 < first < 10  # a few epochs, BERT's masks changing; the rest on demand
    epochs = {"the default 12": 12, "the most": MAX_EPOCHS, "one past the first": first + 1, "the first": first,
              "one": 1}[case]
    tokenizer, tokens, runs = _runs(models, LONG, epochs)
    table = masking_view.masking_table(tokenizer, tokens, runs)
    body = table.split("</style>", 1)[1]
    shown, _, later = body.partition('<details class="mk-later">')
    assert _epochs_of(table) == list(range(1, epochs + 1))  # each once, in order
    assert _epochs_of(shown) == list(range(1, min(epochs, first) + 1))
    if epochs <= first:
        assert not later and "<details" not in body
        return
    summary = re.match(r"<summary>(.*?)</summary>", later)[1]
    assert _epochs_of(later) == list(range(first + 1, epochs + 1))
    rest = f"Epoch {epochs}" if epochs == first + 1 else f"Epochs {first + 1}–{epochs}"
    again = ": BERT's 10 masks start again at epoch 11" if epochs > 10 else ""
    assert summary == rest + again
    assert body.count("<thead>") == 2 and body.count('<colgroup>') == 2  # the same columns, named the same
    head = re.findall(r"<thead>.*?</thead>", body)
    assert head[0] == head[1] and "RoBERTa dynamic" in head[0]
    assert "<details open" not in body and body.count("<details") == 1
    # inside the box: the region a keyboard focuses, whose focus shows the hidden epochs' originals too once open
    box = re.search(r'<div class="mk-scroll"[^>]*>(.*)<div class="mk-more"', body, re.S)[1]
    assert '<details class="mk-later">' in box and box.rstrip().endswith("</details>")
    css = table.split("</style>", 1)[0]
    assert ".mk-later>summary" in css and "summary:focus-visible" in css


def test_bert_static_names_say_what_dupe_factor_is_in_words(models):
    """The epoch table's headers and the coverage legend wrote "dupe_factor=1" and "dupe_factor=10", a flag of
    BERT's preprocessing that the page never explains: the names say what it counts, copies of the data each
    masked once, and the tables' short names and the API's rows keep the names they had."""
    tokenizer, tokens, runs = _runs(models, LONG, 3)
    table = masking_view.masking_table(tokenizer, tokens, runs)
    head = [html.unescape(th) for th in re.findall(r"<th>(.*?)</th>", re.search(r"<thead>(.*?)</thead>", table)[1])]
    curves = {key: [0.2] * 3 for key in masking_view.SCHEMES}
    legend = [t.get_text().replace("\n", " ") for t in
              figures.coverage_plot(curves, masking_view.SCHEMES).axes[0].get_legend().get_texts()]
    for names in (head[1:], legend[:3]):
        assert names == list(masking_view.SCHEMES.values()) and not any("dupe_factor=" in n for n in names)
    assert "(1 masked copy of the data)" in masking_view.SCHEMES["static1"]
    assert "(10 masked copies of the data: BERT's dupe_factor)" in masking_view.SCHEMES["static10"]
    for key, name in masking_view.SCHEMES.items():
        assert name.startswith(masking_view.SHORT_NAMES[key])  # the tables' short name, then what it means


def test_positions_say_they_count_from_the_s_token(handlers, models):
    """The predictions' "position" counted from 0, the <s> the tokenizer adds, beside layers and heads counted from
    1: "position 2" was the 2nd word. The column says where it starts, in the API's headers and on the page, and
    every position is the original token's index among the tokens, <s> at 0."""
    column = masking_view.PREDICTION_COLUMNS[1]
    assert column == "position (0 = <s>)" and column in masking_view.NUMBER_COLUMNS
    tokens = tokens_view.tokenize(models.mlm.tokenizer, LONG, 64)
    assert tokens.labels[0] == "<s>"
    outputs = handlers.masking_page(LONG, 4, 0)
    rows, view = outputs[3], outputs[-1]
    assert rows and all(row[2] == tokens.labels[row[1]] for row in rows)
    assert "| position \\(0 = &lt;s&gt;\\) |" in view  # escaped: shown as written, not as an HTML tag


def test_a_text_cut_to_the_models_length_is_said_above_the_table(handlers):
    """A text longer than the model reads was cut with only a toast, gone in 10 s, while the counts ("126 of 126")
    read as the whole text's: the table says so where the results are, and a text that fits says nothing."""
    with pytest.warns(UserWarning, match="longer than"):
        table, stats, *_ = handlers.masking("word " * 200, 3, 0)
    said = re.search(r'<p class="mk-special-note">(.*?)</p>', table)[1]
    n = int(stats[0][2].split(" of ")[1])  # "19 of 62": the positions that count
    assert said == (f"Your text is longer than the model reads: only its first {n} tokens are shown and masked "
                    f"here ({n + 2} with &lt;s&gt; and &lt;/s&gt;), and every count on this tab is of them.")
    assert "longer than the model reads" not in handlers.masking("A short text.", 3, 0)[0]


# ----------------------------------------------------------------------------- epochs where nothing was masked
def test_a_cell_without_a_target_says_so(models):
    tokenizer, tokens, runs = _runs(models, SHORT, MAX_EPOCHS)
    empty = masking_view.empty_epochs(runs)
    assert sum(map(len, empty.values())) > 0, "the short sentence should get some empty masks"
    table = masking_view.masking_table(tokenizer, tokens, runs)
    rows = _cells(table)
    assert len(rows) == MAX_EPOCHS and all(len(cells) == 3 for cells in rows)
    said = []
    for e, cells in enumerate(rows):
        for key, cell in zip(masking_view.SCHEMES, cells):
            nothing = not (runs[key][e].outcome[0] != NOT_SELECTED).any()
            assert (e + 1 in empty[key]) == bool(nothing)
            assert ('class="mk-none"' in cell) == bool(nothing), (key, e)
            assert ("mk-1" in cell or "mk-2" in cell or "mk-3" in cell) != bool(nothing)  # a target, or the line
            if nothing:
                said.append(re.search(r'<span class="mk-none">\((.*?)\)</span>', cell)[1])
    # the first one in the table says why; the others say only that it happened
    assert said[0] == ("no token picked this time: each token is picked with p = 0.15, so a short sentence "
                       "sometimes gets none")
    assert set(said[1:]) <= {"no token picked this time"}
    assert f"{MLM_PROBABILITY:g}" == "0.15"


def test_no_cell_note_and_no_empty_note_when_every_mask_has_a_target(models):
    tokenizer, tokens, runs = _runs(models, LONG, 12)
    assert not any(masking_view.empty_epochs(runs).values())
    table = masking_view.masking_table(tokenizer, tokens, runs)
    assert "mk-none" not in table.split("</style>", 1)[1] and "mk-empty-note" not in table
    assert "no token picked" not in table


def test_distinct_masks_count_an_empty_mask_once_and_the_note_says_so(models):
    """The reviewer's case: "10 masks cycling" but "distinct masks shown: 9", because two of BERT's copies
    were empty (the same mask: the sentence unchanged). The count and the note under the table agree."""
    tokenizer, tokens, runs = _runs(models, SHORT, MAX_EPOCHS)
    stats, _ = masking_view.masking_stats(tokens, runs)
    assert masking_view.MASKING_COLUMNS[1] == "distinct masks"
    empty = masking_view.empty_epochs(runs)
    table = masking_view.masking_table(tokenizer, tokens, runs)
    note = re.search(r'<p class="mk-empty-note">(.*?)</p>', table)[1]
    assert "Each token is picked with p = 0.15" in note and "counts it once" in note
    for row, key in zip(stats, masking_view.SCHEMES):
        batches = runs[key]
        full = {(tuple(b.input_ids[0].tolist()), tuple(b.outcome[0].tolist())) for b in batches
                if (b.outcome[0] != NOT_SELECTED).any()}
        assert row[0] == masking_view.SHORT_NAMES[key]
        assert row[1] == masking_view.distinct_masks(batches) == len(full) + bool(empty[key])
        short = masking_view.SHORT_NAMES[key]
        if not empty[key]:
            assert f"{short}:" not in note
        elif row[1] == 1:
            assert f"{short}: {len(empty[key])} of {MAX_EPOCHS} epochs (1 mask below: the empty one)" in note
        else:
            assert f"({row[1]} distinct masks below, one of them empty)" in note
    if empty["static10"]:  # which of BERT's 10 copies are empty: they make the count fall short of 10
        copies = sorted({(e - 1) % 10 + 1 for e in empty["static10"]})
        assert f"of 10 ({stats[1][1]} distinct" in note and ", ".join(map(str, copies)) in note


def test_the_empty_note_lists_few_epochs_and_counts_many():
    class Batch:
        def __init__(self, picked):
            self.input_ids = torch.tensor([[0, 5, 6, 2]])
            self.outcome = torch.tensor([[0, int(picked), 0, 0]])

    runs = {"static1": [Batch(True)] * 12, "static10": [Batch(e % 10 not in (6, 7)) for e in range(12)],
            "dynamic": [Batch(e != 7) for e in range(12)]}
    note = masking_view.empty_note(runs)
    assert "BERT static, one fixed mask" not in note
    assert "BERT static, 10 masks cycling: epochs 7, 8, masks 7, 8 of 10 (2 distinct masks below" in note
    assert "RoBERTa dynamic: epoch 8 (2 distinct masks below, one of them empty)" in note
    runs["dynamic"] = [Batch(e == 0) for e in range(40)]
    assert "RoBERTa dynamic: 39 of 40 epochs (2 distinct" in masking_view.empty_note(runs)
    assert masking_view.empty_note({"dynamic": [Batch(True)] * 3}) == ""


def test_the_empty_note_says_bert_itself_never_has_an_empty_mask():
    """A "BERT static" column with no target showed BERT with a property its own code lacks: it picks 15% of a
    row's tokens, rounded, at least one (create_pretraining_data.py's num_to_predict). The note says so, with the
    rate the masker uses."""
    class Batch:
        input_ids = torch.tensor([[0, 5, 2]])
        outcome = torch.tensor([[0, 0, 0]])

    note = masking_view.empty_note({"static10": [Batch()] * 3})
    assert (f"(BERT's own code picks {MLM_PROBABILITY:.0%} of a row's tokens, rounded, at least one (and at most its "
            "max_predictions_per_seq); this demo, like Hugging Face's collator, picks each token on its own)") in note


def test_predictions_say_no_token_picked(handlers):
    predictions = handlers.masking(SHORT, MAX_EPOCHS, 0)[3]
    empty = [row for row in predictions if row[1] is None]
    assert empty and all(row[3] == "no token picked" for row in empty)
    assert all(len(row) == len(masking_view.PREDICTION_COLUMNS) for row in predictions)


def test_predictions_and_replacements_name_part_of_a_character(handlers, models):
    """Emoji and Japanese are byte pieces: the predictions table and the epoch table name their bytes, never "�"."""
    text = "😀 🎉 東京 😀 🎉 東京 and some words"
    table, _, _, predictions, _ = handlers.masking(text, MAX_EPOCHS, 0)
    shown = [cell for row in predictions for cell in row[4:6]]
    assert shown and all("\ufffd" not in cell for cell in shown)
    assert "\ufffd" not in table
    tokenizer = models.mlm.tokenizer
    piece = tokenizer.encode("😀").ids[1]  # after <s>: the emoji's first byte, 0xF0
    assert masking_view.shown_token(tokenizer, piece) == "⟨byte 0xF0⟩ (part of a character)"
    word = tokenizer.encode(" the").ids[1]
    assert masking_view.shown_token(tokenizer, word) == tokenizer.decode([word]).strip()  # a word: as it reads


# ----------------------------------------------------------------------------- a special token typed in the sentence
def test_a_typed_mask_shows_in_every_cell_as_an_untouched_special_token(models):
    """The reviewer's case: "The <mask> sat on the mat." showed "The sat on the mat." (the typed <mask> left out of
    every cell) while the predictions table counted positions with it and the model saw it. It shows in every
    cell, in its place, as a special token (never a target), and a line above the table says why."""
    tokenizer, tokens, runs = _runs(models, "The <mask> sat on the mat.", 12)
    table = masking_view.masking_table(tokenizer, tokens, runs)
    special = '<i class="mk-special">&lt;mask&gt;</i>'
    rows = _cells(table)
    for cells in rows:
        for cell in cells:
            assert cell.count(special) == 1
            tags = re.findall(r"<i[^>]*>", cell)
            assert tags[1] == '<i class="mk-special">'  # after "The", before "sat": where it was typed
            assert re.search(r"</i> " + re.escape(special) + " <i", cell)  # a word of its own: spaces around it
    note = re.search(r'<p class="mk-special-note">(.*?)</p>', table)[1]
    assert note == ("“&lt;mask&gt;” typed in the sentence is a special token (in a dashed box): it stays as typed in "
                    "every epoch and is never a target, so “positions ever a target” leaves it out.")
    assert ".mk-special{border:1px dashed}" in table  # styled as a special token
    # typed against a word, it has no space of its own
    tokenizer, tokens, runs = _runs(models, "The cat<mask> sat.", 2)
    cell = _cells(masking_view.masking_table(tokenizer, tokens, runs))[0][0]
    assert "</i>" + special + " <i" in cell
    # no typed special token: no note, no dashed box
    tokenizer, tokens, runs = _runs(models, LONG, 2)
    table = masking_view.masking_table(tokenizer, tokens, runs)
    assert "mk-special-note" not in table and 'class="mk-special"' not in table



def test_three_typed_special_tokens_are_listed_with_commas(models):
    """The note joined every name with "and" ("“<s>” and “<mask>” and “</s>”"): a list reads "a, b and c"."""
    tokenizer, tokens, runs = _runs(models, "<s> The <mask> sat. </s>", 2)
    note = re.search(r'<p class="mk-special-note">(.*?)</p>', masking_view.masking_table(tokenizer, tokens, runs))[1]
    assert note.startswith("“&lt;s&gt;”, “&lt;mask&gt;” and “&lt;/s&gt;” typed in the sentence are special tokens")

# ----------------------------------------------------------------------------- targets: keyboard, tap, screen reader
def test_every_target_is_focusable_and_tells_its_original(models):
    tokenizer, tokens, runs = _runs(models, LONG, 12)
    table = masking_view.masking_table(tokenizer, tokens, runs)
    body = table.split("</style>", 1)[1]
    targets = TARGET.findall(body)
    n_targets = sum(int((b.outcome[0] != NOT_SELECTED).sum()) for batches in runs.values() for b in batches)
    assert len(targets) == n_targets > 0
    for outcome, attrs, inner in targets:
        assert 'tabindex="-1"' in attrs and re.search(r'title="[^"]+"', attrs)  # a tap focuses it; no tab stop
        was = re.search(r'title="([^"]*)"', attrs)[1]
        sr = re.search(r'<b class="sr">(.*?)</b>', inner)[1]  # what a screen reader says
        assert sr == masking_view.SAID[int(outcome)].format(was)
    # the tokens that are not targets stay bare: no tab stop, no title
    assert body.count("<i>") == 3 * 12 * sum(not s for s in tokens.special) - n_targets
    assert body.count('tabindex="0"') == 1  # the keyboard's one stop: the table's scroll box, not every target


# (that the original shows on hover and, every one in line, when the table has the keyboard's focus, with a
# visible ring, and that the screen-reader text stays out of sight: tests/test_app_browser.py, in Chromium)


def test_the_note_tells_how_to_see_the_original(models):
    tokenizer, tokens, runs = _runs(models, LONG, 2)
    note = masking_view.masking_table(tokenizer, tokens, runs)
    assert "Hover over or tap a coloured token" in note and "Tab to the table: every original shows" in note


def test_table_size_stays_bounded_with_the_tab_stops(models):
    """128 tokens x 40 epochs used to be ~890 KB; tabindex="-1" on each target adds 14 bytes to 15% of tokens."""
    tokenizer, tokens, runs = _runs(models, "the cat sees the house every day. " * 200, MAX_EPOCHS)
    n_tokens = sum(not s for s in tokens.special)
    table = masking_view.masking_table(tokenizer, tokens, runs)
    # 20 bytes a token, and what any table has whatever its size: the CSS, legend, notes, the "more below" line, and
    # the later epochs' disclosure (its summary, and its table's headers again), and the note that the text was cut
    assert len(table.encode()) < 20 * 3 * MAX_EPOCHS * n_tokens + 7_300


# ----------------------------------------------------------------------------- the coverage figure
@pytest.mark.parametrize("epochs", [1, 12, MAX_EPOCHS])
def test_coverage_legend_reads_at_9_pt_on_a_phone(epochs):
    """The figure is drawn at its own size on a computer and shrunk to ~370 px on a 390 px phone, where its
    legend was 8 pt x 370 / 800 = 3.7 pt (about 4 px). Now >= 9 pt there, under the axes, inside the figure."""
    curves = {k: [min(1.0, 0.15 * (i + 1)) for i in range(epochs)] for k in masking_view.SCHEMES}
    fig = figures.coverage_plot(curves, masking_view.SCHEMES)
    fig.draw_without_rendering()  # lays it out as saving it does (the page gets a PNG)
    ax, legend = fig.axes[0], fig.axes[0].get_legend()
    width_px = fig.get_size_inches()[0] * fig.dpi
    shrink = min(1.0, 370 / width_px)
    assert all(t.get_fontsize() * shrink >= 9 for t in legend.get_texts())
    assert all(t.get_size() * shrink >= 8 for t in ax.get_xticklabels() + ax.get_yticklabels())
    box, frame = legend.get_window_extent(), fig.bbox
    assert box.y1 <= ax.get_window_extent().y0  # below the lines
    assert box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 - 2  # not cut off
    texts = [t.get_text() for t in legend.get_texts()]
    assert len(texts) == 4 and all(len(line) <= 34 for text in texts for line in text.split("\n"))
    assert texts[0].replace("\n", " ") == masking_view.SCHEMES["static1"]
    # the title (the image's name for a screen reader, app.py's Plot) is one line of text, wrapped when drawn
    assert ax.get_title() == "Coverage: how much of the sentence the model was ever asked to predict"
    title = ax.title.get_window_extent()
    assert title.x0 >= frame.x0 and title.x1 <= frame.x1 and title.y1 <= frame.y1
    ticks = [t for t in ax.get_xticks() if 0.5 <= t <= epochs + 0.5]
    assert ticks and all(float(t).is_integer() for t in ticks)  # whole epochs, one epoch too


def test_the_coverage_figure_has_a_text_version_that_says_what_its_lines_draw(models):
    """Every other figure has a closed table of its numbers; the coverage plot's curves (how fast each scheme covers
    the sentence, what the hint asks to notice) were lines only. Its text version gives, epoch by epoch, each line
    the figure draws, the dotted expectation included, and the share's denominator."""
    epochs = 12
    tokenizer, tokens, runs = _runs(models, LONG, epochs, seed=3)
    stats, curves = masking_view.masking_stats(tokens, runs)
    text = masking_view.coverage_html(curves, tokens)
    assert re.match(r'<style>.*</style><details class="mk-coverage"><summary>The figure as text</summary>', text,
                    re.S)  # closed
    positions = sum(not s for s in tokens.special)
    assert f"as a share of the {positions} that can be one" in text
    head = re.findall(r'<th scope="col">(.*?)</th>', text)
    rows = re.findall(r'<tr><th scope="row">(\d+)</th>(.*?)</tr>', text)
    assert [int(n) for n, _ in rows] == list(range(1, epochs + 1))
    columns = list(zip(*(re.findall(r"<td>(.*?)</td>", cells) for _, cells in rows)))
    lines = figures.coverage_plot(curves, masking_view.SCHEMES).axes[0].get_lines()
    assert len(head) == 1 + len(lines) == 1 + len(columns), head
    for name, line, column in zip(head[1:], lines, columns):
        assert [f"{y / 100:.1%}" for y in line.get_ydata()] == list(column), name
    # its last row is the statistics' coverage, written alike, and the expectation is 1 - 0.85^epoch
    assert [column[-1] for column in columns[:3]] == [row[3] for row in stats]
    assert columns[3][1] == f"{1 - (1 - MLM_PROBABILITY) ** 2:.1%}" and head[-1] == "expected, a new mask every epoch"


# ----------------------------------------------------------------------------- the page's two data tables
def test_the_page_shows_the_statistics_and_predictions_as_tables_as_wide_as_their_words(handlers):
    """The statistics and the predictions were Dataframes whose columns were fixed shares of their box: at 1280 px
    "BERT static, one fixed mask" and the headers wrapped over 3-4 lines. The page shows them as Markdown tables
    (`masking_page`: `data_markdown`), sized by their words, which hold the API's rows cell by cell, numbers
    right-aligned, a token of the user's text shown literally; the API's outputs are the rows, as before."""
    from demo.formatting import md_escape

    text = "The *old* man | the river."
    outputs = handlers.masking(text, 6, 0)
    *page_outputs, stats_view, predictions_view = handlers.masking_page(text, 6, 0)
    assert len(page_outputs) == len(outputs) and page_outputs[1] == outputs[1] and page_outputs[3] == outputs[3]
    for view, columns, rows in ((stats_view, masking_view.MASKING_COLUMNS, outputs[1]),
                                (predictions_view, masking_view.PREDICTION_COLUMNS, outputs[3])):
        lines = view.split("\n")
        start = lines.index("| " + " | ".join(md_escape(c) for c in columns) + " |")
        aligned = ["--:" if c in masking_view.NUMBER_COLUMNS else "---" for c in columns]
        assert lines[start + 1] == "|" + "|".join(aligned) + "|"
        assert lines[start + 2:] == ["| " + " | ".join("" if v is None else md_escape(str(v)) for v in row) + " |"
                                     for row in rows]
    assert predictions_view.startswith(masking_view.PREDICTIONS_SAID)
    originals = {row[2] for row in outputs[3]}  # the targets' original tokens: this seed's include the "*" of *old*
    assert "*" in originals and "\\*" in predictions_view  # shown as typed, not as emphasis


def test_a_figure_saves_on_white_even_when_it_asks_for_a_transparent_background():
    """Gradio's Plot saves the app's figures with savefig's defaults; on the dark page a transparent figure would
    show the page through its black text and lines. demo.figures pins savefig's background to white."""
    import io

    from PIL import Image

    curves = {k: [0.15, 0.3] for k in masking_view.SCHEMES}
    fig = figures.coverage_plot(curves, masking_view.SCHEMES)
    fig.set_facecolor("none")  # what a style or a figure of its own might ask for
    png = io.BytesIO()
    fig.savefig(png, format="png")
    assert Image.open(png).convert("RGBA").getpixel((0, 0)) == (255, 255, 255, 255)
