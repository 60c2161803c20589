"""The Embeddings tab's modules (demo.embedding_view, demo.word_map, demo.position_view): nearest words, analogies,
the neighbour table and the two figures, on hand-made embedding tables whose answers are known, and one check on the
shipped model."""
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import roberta
from demo import embedding_view as ev
from demo import position_view as pv
from demo import word_map as wm
from demo.examples import ANALOGIES, ANALOGY_PROBE, MAP_WORDS
from helpers import contrast_with_white

ASSETS = Path(__file__).resolve().parent.parent / "assets"
# A corpus whose tokenizer has the forms the tests need as single tokens: " cat", "cat" (no space), " Cat",
# " dog", " horse", " the", " The", " good", " bad", " Monday"; " catdog" is the two pieces " cat" + "dog".
CORPUS = ["cat sat. The cat and the Cat met a dog, a Dog and a horse on Monday. CAT bad good"] * 50
H = 8


@pytest.fixture(scope="module")
def tok():
    tokenizer = roberta.train_tokenizer(CORPUS, vocab_size=400, min_frequency=1, show_progress=False)
    for word in ["cat", "Cat", "dog", "horse", "the", "The", "good", "bad", "Monday"]:
        assert len(tokenizer.encode(" " + word, add_special_tokens=False).ids) == 1, word
    return tokenizer


def tid(tokenizer, text: str) -> int:
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    assert len(ids) == 1, (text, ids)
    return ids[0]


@pytest.fixture
def table(tok):
    """A random (V, H) table, a fresh one per test (the tests change its rows)."""
    generator = torch.Generator().manual_seed(0)
    return torch.randn(tok.get_vocab_size(), H, generator=generator)


def brute_force(table, vector):
    return torch.nn.functional.cosine_similarity(table, vector[None], dim=-1)  # (V,)


def test_a_row_set_parallel_to_the_query_is_its_top_neighbour_at_similarity_one(tok, table):
    cat, dog = tid(tok, " cat"), tid(tok, " dog")
    with torch.no_grad():
        table[dog] = 3 * table[cat]  # same direction, other length: cosine 1
    result = ev.nearest_words(table, tok, "cat", k=3)
    assert result["word"] == "cat" and result["pieces"] == ["␣cat"]
    top = result["neighbours"][0]
    assert (top["token"], top["token_str"]) == (dog, " dog")
    assert top["similarity"] == pytest.approx(1.0, abs=1e-5)
    assert ev.nearest_words(table, tok, " dog ", k=1)["neighbours"][0]["token"] == cat  # and the other way
    sims = [n["similarity"] for n in result["neighbours"]]
    assert sims == sorted(sims, reverse=True) and len(sims) == 3


def test_similarities_are_the_cosines_of_the_rows(tok, table):
    result = ev.nearest_words(table, tok, "horse", k=5, words_only=False)
    expected = brute_force(table, table[tid(tok, " horse")])
    for n in result["neighbours"]:
        assert n["similarity"] == pytest.approx(float(expected[n["token"]]), abs=1e-5)


def test_the_query_its_variants_and_special_tokens_are_never_neighbours(tok, table):
    query = tid(tok, " Cat")
    variants = [tid(tok, " cat"), tid(tok, "cat")]
    specials = [tok.token_to_id(t) for t in ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]]
    with torch.no_grad():
        table[variants + specials] = table[query].clone()  # each would be at similarity 1
    for words_only in (True, False):
        result = ev.nearest_words(table, tok, "Cat", k=ev.MAX_K, words_only=words_only)
        shown = {n["token"] for n in result["neighbours"]}
        assert shown and not shown & {query, *variants, *specials}
        assert result["neighbours"][0]["similarity"] < 0.999


def test_a_query_of_two_words_never_lists_either_words_variants(tok, table):
    """Only the whole query's form was left out: "cat dog" listed " Cat" and " Dog", its own words, first."""
    query = ev.look_up_word(table, tok, "cat dog")[1]
    variants = [tid(tok, w) for w in (" cat", " Cat", "cat", " dog", " Dog")]
    with torch.no_grad():
        table[variants] = query.clone()  # each would be at similarity 1
    shown = {n["token"] for n in ev.nearest_words(table, tok, "cat dog", k=ev.MAX_K)["neighbours"]}
    assert shown and not shown & set(variants)


def test_words_only_keeps_word_forms_one_per_word(tok, table):
    good = tid(tok, " good")
    close = [tid(tok, "."), tid(tok, "dog"), tid(tok, " The"), tid(tok, " the")]
    with torch.no_grad():
        for rank, token in enumerate(close):  # "." nearest, then "dog", then " The", then " the"
            table[token] = table[good] + 0.01 * (rank + 1) * torch.ones(H)
    everything = ev.nearest_words(table, tok, "good", k=4, words_only=False)
    assert [n["token"] for n in everything["neighbours"]] == close
    words = ev.nearest_words(table, tok, "good", k=20)
    assert words["neighbours"][0]["token"] == tid(tok, " The")  # " the" is the same word: only the best shows
    assert tid(tok, " the") not in {n["token"] for n in words["neighbours"]}
    for n in words["neighbours"]:
        assert n["token_str"].startswith(" ") and any(c.isalpha() for c in n["token_str"])
    forms = [n["token_str"].strip().casefold() for n in words["neighbours"]]
    assert len(forms) == len(set(forms))


def test_a_word_in_pieces_is_the_mean_of_their_rows(tok, table):
    _, vector, pieces, _ = ev.look_up_word(table, tok, "catdog")
    ids = tok.encode(" catdog", add_special_tokens=False).ids
    assert pieces == ["␣cat", "dog"] and len(ids) == 2
    assert torch.allclose(vector, table[ids].mean(dim=0))
    _, one, pieces, _ = ev.look_up_word(table, tok, "  horse\n")
    assert pieces == ["␣horse"] and torch.equal(one, table[tid(tok, " horse")])
    # the pieces of the query are its own tokens: not its neighbours
    result = ev.nearest_words(table, tok, "catdog", k=ev.MAX_K, words_only=False)
    assert not {n["token"] for n in result["neighbours"]} & set(ids)
    assert "in 2 pieces" in ev.neighbours_html(result, "Nearest")


@pytest.mark.parametrize("word, message", [
    ("", "empty"), ("   \n", "empty"), ("a" * 41, "longer than 40 characters"),
    ("qxzjvkwp", "pieces"), ("<mask>", "^“<mask>” is the special token <mask>, not a word"),
    ("cat</s>", "^“cat</s>” holds the special token </s>, not a word"),
    ("cat東", "“cat東” has characters this tokenizer cuts into bytes"),  # its bytes' rows are every such character's
    ("\ud800", "broken character"), ("ca\udc80t", "broken character"),  # lone surrogates, as JSON can send
])
def test_bad_words_are_refused_with_a_plain_message(tok, table, word, message):
    with pytest.raises(ValueError, match=message):
        ev.nearest_words(table, tok, word)


@pytest.mark.parametrize("typed", ["␣cat", "Ġcat", " ␣cat\n", "␣Ġcat"])
def test_a_word_is_read_as_the_tokens_tab_shows_it(tok, table, typed):
    """A leading "␣" (the Tokens tab's) or "Ġ" (the vocabulary's) is the space it stands for, not bytes: the word,
    its own forms kept out of its neighbours, its label on the map."""
    assert ev.nearest_words(table, tok, typed, k=ev.MAX_K) == ev.nearest_words(table, tok, "cat", k=ev.MAX_K)
    assert ev.analogy(table, tok, typed, "dog", "good")["query"] == ["cat", "dog", "good"]
    assert wm.word_map_points(table, tok, [typed, "dog", "horse", "cat"])[0] == ["cat", "dog", "horse"]


def test_a_leading_g_that_makes_no_vocabulary_entry_is_a_letter(tok, table):
    """"Ġ" is also a letter (Maltese "Ġenerali"): where the word with it is no vocabulary entry, the word is read
    as typed ("Ġcatdog" was read as "catdog", the pieces " cat" and "dog"); in an entry ("Ġcat") it is the space."""
    assert tok.token_to_id("Ġcatdog") is None and tok.token_to_id("Ġcat") is not None
    with pytest.raises(ValueError, match="“Ġcatdog” has characters this tokenizer cuts into bytes"):
        ev.nearest_words(table, tok, "Ġcatdog")
    assert ev.nearest_words(table, tok, "Ġcat")["pieces"] == ev.nearest_words(table, tok, "cat")["pieces"] == ["␣cat"]


@pytest.mark.parametrize("k", [0, -1, ev.MAX_K + 1, 2.5, True])
def test_a_bad_k_is_refused(tok, table, k):
    with pytest.raises(ValueError, match="neighbours"):
        ev.nearest_words(table, tok, "cat", k=k)


def test_analogy_finds_the_row_at_b_minus_a_plus_c(tok):
    """Hand-built: a, b, c are unit axes and d's row is b - a + c exactly, so d is at cosine 1; a, b and c are
    close to the target too (cosine 1/sqrt(3)) but never listed, nor their case variants."""
    a, b, c, d = (tid(tok, w) for w in [" cat", " dog", " good", " bad"])
    table = 0.01 * torch.randn(tok.get_vocab_size(), H, generator=torch.Generator().manual_seed(1))
    eye = torch.eye(H)
    table[a], table[b], table[c] = 2 * eye[0], 5 * eye[1], eye[2]  # lengths differ: 3CosAdd uses unit vectors
    table[d] = eye[1] - eye[0] + eye[2]
    table[tid(tok, " Cat")] = table[a]
    result = ev.analogy(table, tok, "cat", "dog", "good", k=5, words_only=False)
    assert result["query"] == ["cat", "dog", "good"] and result["word"] == "dog − cat + good"
    assert result["query_pieces"] == [["␣cat"], ["␣dog"], ["␣good"]] and result["pieces"] == ["␣cat", "␣dog", "␣good"]
    top = result["neighbours"][0]
    assert top["token"] == d and top["similarity"] == pytest.approx(1.0, abs=1e-5)
    assert not {n["token"] for n in result["neighbours"]} & {a, b, c, tid(tok, " Cat"), tid(tok, "cat")}


def test_an_analogy_says_when_the_nearest_word_would_be_one_of_its_own(tok):
    """The view said "never the three words themselves" but not why: without that rule the nearest word is
    usually b itself (man : king :: woman → king), which flatters 3CosAdd. The view says which word it would be."""
    a, b, c = (tid(tok, w) for w in [" cat", " dog", " good"])
    table = 0.01 * torch.randn(tok.get_vocab_size(), H, generator=torch.Generator().manual_seed(1))
    eye = torch.eye(H)
    table[a], table[b], table[c] = eye[0], eye[1], eye[0] + 0.05 * eye[2]  # c ≈ a: b − a + c lies nearest b
    result = ev.analogy(table, tok, "cat", "dog", "good", k=5, words_only=True)
    unit = table / table.norm(dim=1, keepdim=True)
    target = unit[b] - unit[a] + unit[c]
    assert int((unit @ target).argmax()) == b and result["nearest_unruled"] == " dog"
    assert "(without that rule the nearest word would be “dog”, b itself" in ev.neighbours_html(result, "t")
    # an analogy whose nearest word is none of its own: nothing more is said
    table[tid(tok, " bad")] = 3 * target  # exactly the target's direction
    result = ev.analogy(table, tok, "cat", "dog", "good", k=5, words_only=True)
    assert result["nearest_unruled"] == " bad" and "without that rule" not in ev.neighbours_html(result, "t")


def test_the_position_note_reads_the_offset_and_the_row_length_from_the_config():
    """The note said "0 is <s>" without saying that position 0 is the table's row 2 (and called rows 0 and 1 never
    read, where <pad> reads row 1), and blamed RoBERTa's packing for the odd last position, which comes from this
    project packing every row full."""
    cfg = roberta.RobertaConfig(max_position_embeddings=66, pad_token_id=1)
    note = pv.positions_note(cfg)
    # row 1 is not unused: every <pad> reads it (position_ids_from_input_ids gives padding pad_token_id)
    assert "(position 0 is the table's row 2; row 1 is the one every &lt;pad&gt; reads and rows below it are never " \
           "read, as in roberta-base's 514 rows for 512 positions)" in note
    assert roberta.model.position_ids_from_input_ids(torch.tensor([[0, 5, 2, 1]]), 1).tolist() == [[2, 3, 4, 1]]
    # the rows are packed to the run's length (64 tokens in one early phase of the shipped model), not always 128
    assert "because this project packs every pretraining row full, ending in &lt;/s&gt; (the model's 64 tokens, " \
           "or fewer where a run was set a shorter length)" in note
    assert "texts were packed into full rows" not in note
    # the note sits under the figure: the lines it points to are under the map, above the note
    assert "The lines under the map read three of its rows." in note and "lines below" not in note


def test_analogy_refuses_bad_input_naming_the_word(tok, table):
    with pytest.raises(ValueError, match="Word b is empty"):
        ev.analogy(table, tok, "cat", " ", "dog")
    with pytest.raises(ValueError, match="The word is empty"):  # only characters that show nothing
        ev.nearest_words(table, tok, "\u200b\u200b\u200d")
    with pytest.raises(ValueError, match="Word c: .*pieces"):
        ev.analogy(table, tok, "cat", "dog", "qxzjvkwp")
    with pytest.raises(ValueError, match="three different words"):
        ev.analogy(table, tok, "cat", "dog", "Cat")
    with pytest.raises(ValueError, match="Word a has a broken character"):
        ev.analogy(table, tok, "\udc80", "dog", "cat")


def test_the_cache_follows_changes_to_the_table(tok, table):
    cat, dog = tid(tok, " cat"), tid(tok, " dog")
    ev.nearest_words(table, tok, "cat")  # norms cached
    with torch.no_grad():
        table[dog] = 2 * table[cat]  # in place: the version counter moves
    top = ev.nearest_words(table, tok, "cat", k=1)["neighbours"][0]
    assert top["token"] == dog and top["similarity"] == pytest.approx(1.0, abs=1e-5)  # not a stale norm
    # new contents with no version bump (a change through .data): forgetting the norms makes them seen
    table.data.copy_(torch.randn(table.shape, generator=torch.Generator().manual_seed(7)))
    with ev._NORMS_LOCK:
        ev._NORMS.clear()
    result = ev.nearest_words(table, tok, "horse", k=ev.MAX_K, words_only=False)
    expected = brute_force(table, table[tid(tok, " horse")])
    assert all(n["similarity"] == pytest.approx(float(expected[n["token"]]), abs=1e-5) for n in result["neighbours"])
    # another table is another entry, even at the same address as a freed one
    other = table.clone()
    other[dog] = -table[cat]
    assert ev.nearest_words(other, tok, "cat", k=1)["neighbours"][0]["token"] != dog


def test_a_parameter_and_a_table_with_more_rows_than_the_tokenizer_work(tok):
    """A model's Parameter is used as it is; rows past the tokenizer's vocabulary (a padded table, as some
    checkpoints have) are never neighbours."""
    rows = tok.get_vocab_size() + 3
    param = torch.nn.Parameter(torch.randn(rows, H, generator=torch.Generator().manual_seed(2)))
    with torch.no_grad():
        param[-3:] = param[tid(tok, " cat")]
    result = ev.nearest_words(param, tok, "cat", k=ev.MAX_K, words_only=False)
    assert result["neighbours"] and all(n["token"] < tok.get_vocab_size() for n in result["neighbours"])


def test_specials_are_read_by_name_with_mask_last(roberta_base_style_tokenizer_file):
    """roberta-base's layout: <mask> is the last id, not 4."""
    tokenizer = roberta.load_tokenizer(roberta_base_style_tokenizer_file)
    mask = tokenizer.token_to_id("<mask>")
    assert mask == tokenizer.get_vocab_size() - 1
    table = torch.randn(tokenizer.get_vocab_size(), H, generator=torch.Generator().manual_seed(3))
    cat = tokenizer.encode(" cat", add_special_tokens=False).ids
    table[mask] = table[cat].mean(dim=0)
    result = ev.nearest_words(table, tokenizer, "cat", k=5, words_only=False)
    assert mask not in {n["token"] for n in result["neighbours"]}


def test_neighbours_html_escapes_and_shows_numbers_and_bars():
    result = {"word": "<b>x</b>", "pieces": ["␣<b>", "x"], "words_only": False,
              "neighbours": [{"token": 5, "token_str": " <script>", "similarity": 0.75},
                             {"token": 6, "token_str": "&amp;", "similarity": -0.2}]}
    out = ev.neighbours_html(result, "Nearest to <i>it</i>")
    assert "<script>" not in out.replace(ev.EMBEDDING_CSS, "") and "<b>x" not in out and "<i>it" not in out
    assert "&lt;script&gt;" in out and "&amp;amp;" in out and "Nearest to &lt;i&gt;it&lt;/i&gt;" in out
    assert "0.750" in out and "-0.200" in out  # numbers always shown, negative ones too
    assert 'style="width:75.0%"' in out and 'ev-none" style="width:0.0%"' in out
    assert "in 2 pieces" in out and "good and bad" in out and "Every token competes" in out
    assert out.count("<tr>") == 3  # the header and one row per neighbour
    assert "No token is left" in ev.neighbours_html({**result, "neighbours": []}, "t")


def test_neighbours_html_of_an_analogy_names_the_three_words(tok, table):
    out = ev.neighbours_html(ev.analogy(table, tok, "cat", "dog", "catdog", k=3), "Analogy")
    assert "“cat” is to “dog” as “catdog” is to" in out and "dog − cat + catdog" in out
    assert "in 2 pieces" in out


def test_the_analogy_note_is_short_and_points_to_the_nearest_words(tok, table):
    """The ~170-word note under Nearest words was printed again, word for word, under the analogy: the analogy's
    own note gives its baseline and sends the reader to Nearest words."""
    result = ev.analogy(table, tok, "cat", "dog", "horse", k=3)
    note = ev.neighbours_html(result, "Analogy").split('class="ev-note">')[1]
    assert f"a token picked at random scores {result['baseline']:.2f} on average" in note
    assert "see its note for how to read it" in note
    assert "good and bad" not in note and "Only tokens that begin a word" not in note
    assert "pretraining text" not in note  # no column without counts (`test_token_counts` has one)
    nearest = ev.neighbours_html(ev.nearest_words(table, tok, "cat", k=3), "Nearest").split('class="ev-note">')[1]
    assert "good and bad" in nearest and "Only tokens that begin a word" in nearest
    every = ev.neighbours_html({**result, "words_only": False}, "Analogy")  # the API's: pieces compete too
    assert "Every token competes" in every.split('class="ev-note">')[1]


def smooth_positions(n: int = 40, rows_unused: int = 2) -> torch.Tensor:
    """Sinusoidal rows (the original Transformer's): nearby positions alike; rows 0 and 1 zero, as padding."""
    position = torch.arange(n, dtype=torch.float32)[:, None]  # (n, 1)
    freq = 1.0 / 30 ** (torch.arange(0, H, 2) / H)  # (H / 2,)
    table = torch.cat([torch.sin(position * freq), torch.cos(position * freq)], dim=1)  # (n, H)
    return torch.cat([torch.zeros(rows_unused, H), table])


def test_position_similarities_skip_the_unused_rows():
    sim = pv.position_similarities(smooth_positions())
    assert sim.shape == (40, 40) and not sim.isnan().any()
    assert torch.allclose(sim.diagonal(), torch.ones(40), atol=1e-5) and torch.allclose(sim, sim.T, atol=1e-6)
    assert sim.diagonal(1).mean() > sim.diagonal(10).mean()
    with pytest.raises(ValueError, match="two positions"):
        pv.position_similarities(torch.randn(3, H))


def test_position_figure_has_a_heatmap_a_colorbar_and_lines():
    before = plt.get_fignums()
    fig = pv.position_similarity_figure(smooth_positions(), title="<Positions>")
    heat, lines, bar = fig.axes[0], fig.axes[1], fig.axes[2]
    assert heat.get_xlabel() == heat.get_ylabel() == "position" and heat.get_title() == "<Positions>"
    assert heat.images[0].get_array().shape == (40, 40)
    assert bar.get_xlabel() == "cosine similarity"  # under the map
    assert lines.get_xlabel() == "position" and lines.get_ylabel() == "cosine similarity"
    labels = [t.get_text() for t in lines.get_legend().get_texts()]
    assert labels == ["position 0 (<s>) vs every position", "position 5 vs every position",
                      "position 20 vs every position"]
    assert len({line.get_linestyle() for line in lines.lines[:-1:2]}) == 3  # told apart without colour
    # each line at least 3:1 on white (WCAG 1.4.11; matplotlib's default orange was 2.5:1), and three colours
    assert all(contrast_with_white(line.get_color()) >= 3 for line in lines.lines[:-1]), \
        [(line.get_color(), round(contrast_with_white(line.get_color()), 2)) for line in lines.lines[:-1]]
    assert len({line.get_color() for line in lines.lines[:-1:2]}) == 3
    fig.savefig(__import__("io").BytesIO(), format="png")  # draws
    assert plt.get_fignums() == before  # a plain Figure: nothing left open in pyplot


def test_parse_words_and_the_default_list():
    assert wm.parse_words(" cat, dog,, cat ,\n") == ["cat", "dog"]
    words = wm.parse_words(MAP_WORDS)
    assert wm.MIN_MAP_WORDS <= len(words) <= wm.MAX_MAP_WORDS and len(set(words)) == len(words)
    # without commas, semicolons or new lines, spaces separate: "cat dog bird fish" was one word ("1 given")
    assert wm.parse_words(" cat dog\tbird  fish dog ") == ["cat", "dog", "bird", "fish"]
    assert wm.parse_words("New York, Paris; Rome") == ["New York", "Paris", "Rome"]  # with them, a word of two


def test_the_word_map_counts_the_words_given(tok, table):
    """The refusal counts the words as they were split: "cat dog" is two (it said 1 of "cat dog bird fish")."""
    with pytest.raises(ValueError, match=r"different words, separated by .* spaces, .*: 2 given\.$"):
        wm.word_map(table, tok, wm.parse_words("cat dog"))
    assert wm.word_map_points(table, tok, wm.parse_words("cat dog horse good"))[0] == ["cat", "dog", "horse", "good"]


def test_word_map_points_are_deterministic_and_sign_fixed(tok, table):
    words = ["cat", "dog", "horse", "good", "bad", "Monday"]
    names, points, shares, left_out, _ = wm.word_map_points(table, tok, words)
    assert names == words and points.shape == (6, 2) and left_out == []
    again = wm.word_map_points(table, tok, list(words))[1]
    flipped = wm.word_map_points(-table, tok, words)[1]  # every vector reversed: the same map
    assert torch.equal(points, again) and torch.allclose(points, flipped, atol=1e-5)
    for seed in range(6):  # each component's largest coordinate is positive (by chance: 1 in 4096)
        other = torch.randn(table.shape, generator=torch.Generator().manual_seed(seed))
        for column in wm.word_map_points(other, tok, words)[1].T:
            assert column[column.abs().argmax()] > 0
    assert 0 < shares[1] <= shares[0] <= 1 and sum(shares) <= 1 + 1e-6
    assert abs(float(points.mean(dim=0).abs().max())) < 1e-5  # centred


def test_the_word_map_is_the_projection_on_the_first_two_principal_components(tok, table):
    """The map's points were checked for determinism, signs and centring, and its text against the points
    themselves: points with the singular values dropped (both axes stretched to unit length, so distances no longer
    match the variance shares printed) passed. Now they are checked against a PCA computed here with numpy (rows
    at unit length, centred, SVD; each axis up to its sign), and the shares against the points' own spread."""
    words = ["cat", "dog", "horse", "good", "bad", "Monday"]
    names, points, shares, _, _ = wm.word_map_points(table, tok, words)
    assert names == words
    ids = [tok.encode(" " + w, add_special_tokens=False).ids[0] for w in words]
    x = table[ids].double().numpy()
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    x = x - x.mean(axis=0)
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    expected = x @ vt[:2].T  # (N, 2)
    got = points.double().numpy()
    for axis in range(2):  # a component's sign is arbitrary: the map fixes it its own way
        assert min(np.abs(got[:, axis] - expected[:, axis]).max(),
                   np.abs(got[:, axis] + expected[:, axis]).max()) < 1e-5, axis
    total = (x ** 2).sum()
    np.testing.assert_allclose(shares, s[:2] ** 2 / total, rtol=1e-6)
    np.testing.assert_allclose((got ** 2).sum(axis=0) / total, shares, rtol=1e-5)
    assert shares[0] > shares[1] + 0.01  # the two axes hold different shares: unit-length axes would not show it


def test_the_word_map_labels_every_word(tok, table):
    before = plt.get_fignums()
    words = ["cat", "dog", "horse", "good", "bad", "Monday", "the"]
    fig = wm.word_map(table, tok, words + ["cat", " "])[0]  # repeats and blanks dropped
    ax = fig.axes[0]
    assert sorted(t.get_text() for t in ax.texts) == sorted(words)
    assert ax.get_xlabel().startswith("PC 1 (") and ax.get_xlabel().endswith("% of variance)")
    assert ax.get_ylabel().startswith("PC 2 (")
    fig.savefig(__import__("io").BytesIO(), format="png")
    assert plt.get_fignums() == before


def test_word_map_leaves_out_bad_words_naming_each(tok, table):
    """A word the map cannot place is left out, named under the map with the reason; with fewer than three
    words left, the map is refused, naming every bad word."""
    fig, text = wm.word_map(table, tok, ["cat", "qxzjvkwp", "dog", "<mask>", "horse"])
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["cat", "dog", "horse"]
    assert "Left out:" in text and "qxzjvkwp" in text and "&lt;mask&gt;" in text  # under the map, as text
    assert not fig.texts  # said once: not drawn in the figure too
    with pytest.raises(ValueError) as err:
        wm.word_map(table, tok, ["cat", "qxzjvkwp", "<mask>"])
    assert "Fewer than 3" in str(err.value) and "qxzjvkwp" in str(err.value) and "<mask>" in str(err.value)
    assert "more word" not in str(err.value)
    # 30 bad words: three reasons, then a count (each word's reason made a 2,700-character message)
    with pytest.raises(ValueError) as err:
        wm.word_map(table, tok, ["<s>", "<pad>", "</s>", *(f"{'x' * 45}{i}" for i in range(27))])
    message = str(err.value)
    assert message.count("special token") == 3 and "longer than" not in message
    assert message.endswith(" And 27 more words cannot be placed.") and len(message) < 600, message
    with pytest.raises(ValueError, match="3 to 30"):
        wm.word_map(table, tok, ["cat", " cat "])
    with pytest.raises(ValueError, match="3 to 30"):
        wm.word_map_points(table, tok, [f"w{i}" for i in range(31)])


@pytest.fixture(scope="module")
def shipped():
    """The shipped fill-mask model's embeddings module and its tokenizer."""
    model = roberta.RobertaForMaskedLM.from_pretrained(ASSETS / "mini-roberta-mlm")
    return model.roberta.embeddings, roberta.load_tokenizer(ASSETS / "mini-roberta-mlm")


def test_the_shipped_model_learned_weekdays_and_positions(shipped):
    """Measured on assets/mini-roberta-mlm (32,768 x 256 words, 130 x 256 positions): " Monday"'s nearest words
    are Thursday 0.96, Wednesday 0.96, Sundays, weekends, sunny, updates, Saturday 0.94; the default map's words
    are one token each; adjacent positions have cosine 0.88 on average (0.79 to 0.92 away from the first and
    last), positions 10 apart 0.20. Asserted with a wide margin."""
    embeddings, tokenizer = shipped
    top = ev.nearest_words(embeddings.word_embeddings.weight, tokenizer, "Monday", k=3)["neighbours"]
    assert {n["token_str"].strip() for n in top} & {"Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
                                                     "Sunday"}
    for word in wm.parse_words(MAP_WORDS):
        assert len(ev.look_up_word(embeddings.word_embeddings.weight, tokenizer, word)[2]) == 1, word
    sim = pv.position_similarities(embeddings.position_embeddings.weight)
    assert sim.shape == (128, 128)
    assert sim.diagonal(1)[1:-1].mean() > 0.7 > 0.4 > sim.diagonal(10).mean()


def test_the_shipped_model_answers_every_analogy_example_first(shipped):
    """Each analogy example of the Embeddings tab is a probe question (its expected word known) that the shipped
    model answers first. Monday : Tuesday :: Friday answered "cymbals" (" Tuesday" is 3 pieces there); measured:
    queen 0.878, Germany 0.900, Tokyo 0.884, worse 0.831, smaller 0.885, her 0.879, wrote 0.888."""
    embeddings, tokenizer = shipped
    expected = {(a, b, c): answer for _, a, b, c, answer in ANALOGY_PROBE}
    assert not [chip for chip in ANALOGIES if chip not in expected], "an example the probe does not ask"
    answers = {chip: ev.analogy(embeddings.word_embeddings.weight, tokenizer, *chip, k=1)["neighbours"][0][
        "token_str"].strip() for chip in ANALOGIES}
    assert answers == {chip: expected[chip] for chip in ANALOGIES}


def test_the_shipped_notes_say_which_way_a_word_points(shipped):
    """Measured: "the" scores -0.32 with a token picked at random (99.8% of the tokens below 0), "Monday" 0.88,
    "is" -0.11: the note says "the" points away from the shared direction, "Monday" along it, "is" at right
    angles."""
    table, tokenizer = shipped[0].word_embeddings.weight, shipped[1]
    said = {}
    for word in ("the", "Monday", "is"):
        result = ev.nearest_words(table, tokenizer, word, k=1)
        said[word] = (round(result["baseline"], 2), ev.neighbours_html(result, "t").split('class="ev-note">')[1])
    assert said["the"][0] <= -0.3 and "“the” points away from it" in said["the"][1]
    assert said["Monday"][0] >= 0.8 and "“Monday” points along it" in said["Monday"][1]
    assert abs(said["is"][0]) < ev.LEANING and "“is” stands at about right angles" in said["is"][1]


def test_the_baseline_is_the_querys_mean_similarity_and_the_bars_start_there(tok, table):
    """Every row of a small model's table shares one large direction, so raw scores are all high: the result
    carries the query's baseline (its mean cosine similarity to every ordinary token) and the bars run from it
    to 1."""
    shifted = table + 5.0  # a common direction: every token now scores high
    result = ev.nearest_words(shifted, tok, "cat", k=5, words_only=False)
    specials = {tok.token_to_id(t) for t in roberta.tokenizer.SPECIAL_TOKENS}
    ordinary = [i for i in range(len(table)) if i not in specials]
    expected = brute_force(shifted, shifted[tid(tok, " cat")])[ordinary].mean()
    assert result["baseline"] == pytest.approx(float(expected), abs=1e-5)
    assert result["baseline"] > 0.9 > ev.nearest_words(table, tok, "cat")["baseline"]
    target = ev.analogy(shifted, tok, "cat", "dog", "horse")
    assert 0 < target["baseline"] < 1
    at_baseline = {**result, "neighbours": [{**result["neighbours"][0], "similarity": result["baseline"]},
                                            {**result["neighbours"][1], "similarity": 1.0}]}
    out = ev.neighbours_html(at_baseline, "Nearest")
    assert 'style="width:0.0%"' in out and 'style="width:100.0%"' in out
    assert f"scores {result['baseline']:.2f} on average" in out


def test_the_note_says_which_way_the_word_points_as_its_baseline_shows(tok, table):
    """The note said "the embeddings share one large common direction" beside "the"'s baseline of -0.32 in the
    shipped model: a word pointing away from the shared direction is said to, one along it too, and one at right
    angles (a baseline near 0) as such, each with its own baseline."""
    shifted = table + 5.0  # a common direction every row shares
    the = tid(tok, " the")
    shifted[the] = -shifted[the]  # " the" points away from it
    notes = {}
    for word in ("cat", "the"):
        result = ev.nearest_words(shifted, tok, word, k=3)
        notes[word] = ev.neighbours_html(result, "Nearest").split('class="ev-note">')[1]
        assert f"scores {result['baseline']:.2f} on average" in notes[word]
        assert f"how far a score rises above {result['baseline']:.2f}" in notes[word]
    assert ev.nearest_words(shifted, tok, "the")["baseline"] < -0.9 < 0.9 < ev.nearest_words(shifted, tok, "cat")[
        "baseline"]
    assert "“the” points away from it" in notes["the"] and "score below 0" in notes["the"]
    assert "points along it" not in notes["the"] and "right angles" not in notes["the"]
    assert "“cat” points along it" in notes["cat"] and "away" not in notes["cat"] and "below 0" not in notes["cat"]
    assert "“a” leans toward it" in ev.baseline_said(0.37, "a")
    near = ev.baseline_said(-0.11, "is")
    assert "“is” stands at about right angles" in near and "away" not in near and "along" not in near


def test_every_token_shows_its_leading_space_when_all_tokens_compete(tok, table):
    result = ev.nearest_words(table, tok, "cat", k=ev.MAX_K, words_only=False)
    out = ev.neighbours_html(result, "Nearest")
    spaced = [n for n in result["neighbours"] if n["token_str"].startswith(" ")]
    assert spaced and all(n["label"] == "␣" + n["token_str"][1:] for n in spaced)
    assert all(f">{n['label']}</th>" in out for n in spaced)


def test_digits_begin_words_too():
    tokenizer = roberta.train_tokenizer(["in 1999 and 2001 , 7 of 9 cats", "7 dogs and 9 cats in 1999"] * 20,
                                        vocab_size=300, min_frequency=1, show_progress=False)
    seven, nine = tid(tokenizer, " 7"), tid(tokenizer, " 9")
    table = torch.randn(tokenizer.get_vocab_size(), H, generator=torch.Generator().manual_seed(1))
    table[nine] = 3 * table[seven]
    assert ev.nearest_words(table, tokenizer, "7", k=1)["neighbours"][0]["token"] == nine  # words_only


def test_the_word_map_in_words_names_the_left_out_and_every_coordinate(tok, table):
    """A screen reader gets what the figure draws: the words left out (with the reason) and each word's two
    coordinates, the same numbers as the map's points."""
    words = ["cat", "dog", "horse", "qxzjvkwp"]
    text = wm.word_map(table, tok, words)[1]
    placed, points, shares, *_ = wm.word_map_points(table, tok, words)
    assert "Left out: “qxzjvkwp”" in text and f"PC 1 ({shares[0]:.0%} of variance)" in text
    for word, (x, y) in zip(placed, points.tolist()):
        assert f'<th scope="row">{word}</th><td>{x:+.3f}</td><td>{y:+.3f}</td>' in text
    shown = wm.word_map(table, tok, ["cat", "dog", "horse", "<b>x</b>"])[1]  # left out, named escaped
    assert "<b>" not in shown and "&lt;b&gt;x&lt;/b&gt;" in shown


def test_the_position_figure_in_numbers():
    """The mean similarity at each distance (1 to 16) and the two ends: a table built so they are known."""
    rows = torch.randn(2 + 20, H, generator=torch.Generator().manual_seed(3))  # rows 0-1 unused (padding)
    rows[3] = rows[2]  # positions 0 and 1 identical
    text = pv.positions_html(rows, first_position=2)
    sim = pv.position_similarities(rows, 2)
    assert "Position 0 and 1: 1.00;" in text and f"positions 18 and 19: {float(sim[18, 19]):.2f}." in text
    assert text.count("<tr><td>") == 16 and f"<tr><td>2</td><td>{float(sim.diagonal(2).mean()):.2f}</td>" in text


def drawn_labels(fig, words) -> tuple[list, list]:
    """The map's labels, each word's once, and their boxes as drawn (the text, not its line) in pixels, each
    checked to lie inside the axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax = fig.axes[0]
    labels = ax.texts
    assert sorted(label.get_text() for label in labels) == sorted(words)
    boxes = [Text.get_window_extent(label, canvas.get_renderer()) for label in labels]
    for label, box in zip(labels, boxes):
        assert ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1 and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1, (
            label.get_text(), box)
    return labels, boxes


def assert_labels_apart(fig, words):
    """Each word labelled once, inside the axes (`drawn_labels`); no two labels closer than 2 px (1 px apart,
    "Monday" and "Sunday" read "MondaySunday"), none over another word's point."""
    labels, boxes = drawn_labels(fig, words)
    close = [(labels[i].get_text(), labels[j].get_text()) for i in range(len(boxes)) for j in range(i)
             if boxes[i].padded(1).overlaps(boxes[j].padded(1))]
    assert not close, close
    points = fig.axes[0].transData.transform([label.xy for label in labels])  # (N, 2) pixels
    dot = wm.DOT * fig.dpi / 72  # a point this near another is drawn as one dot with it
    for label, box, own in zip(labels, boxes, points):
        under = [other.get_text() for other, at in zip(labels, points)
                 if math.dist(at, own) > dot and box.padded(dot).contains(*at)]
        assert not under, (label.get_text(), under)


def test_the_default_word_map_labels_stand_apart(shipped):
    """The page's default map: "Monday" and "Sunday" were drawn 1 px apart ("MondaySunday")."""
    embeddings, tokenizer = shipped
    words = wm.parse_words(MAP_WORDS)
    assert_labels_apart(wm.word_map(embeddings.word_embeddings.weight.detach(), tokenizer, words)[0], words)


def test_a_word_in_pieces_is_marked_on_the_map_and_said_under_it(shipped):
    """A word the vocabulary has no token for is placed at the mean of its pieces' vectors (as Nearest words says),
    and its dot looked like any word's: "serendipity" and "xqzt" are marked, and named under the map with their
    pieces."""
    embeddings, tokenizer = shipped
    words = ["serendipity", "xqzt", "dog", "cat", "horse"]
    fig, text = wm.word_map(embeddings.word_embeddings.weight.detach(), tokenizer, words)
    labels = {t.get_text() for t in fig.axes[0].texts}
    assert {"serendipity*", "xqzt*", "dog", "cat", "horse"} == labels
    pieces = [len(tokenizer.encode(" " + w, add_special_tokens=False).ids) for w in words[:2]]
    assert (f"* In several pieces, each placed at the mean of its pieces' vectors (no token of the vocabulary "
            f"is the word): “serendipity” ({pieces[0]}), “xqzt” ({pieces[1]}).") in text
    assert "In several pieces" not in wm.word_map(embeddings.word_embeddings.weight.detach(), tokenizer,
                                                  ["dog", "cat", "horse"])[1]


def test_a_label_at_a_corner_of_its_point_has_a_line_to_it(shipped):
    """The default map's "Germany" sat below and left of its dot with no line, and read as the label of the dot
    beside it: a label beside its point (left, right, above or below) needs none, one at a corner or further out
    has one."""
    embeddings, tokenizer = shipped
    fig = wm.word_map(embeddings.word_embeddings.weight.detach(), tokenizer, wm.parse_words(MAP_WORDS))[0]
    labels = fig.axes[0].texts
    corner = [label.get_text() for label in labels if all(label.xyann)]  # offset in both directions
    assert "Germany" in corner
    assert all((label.arrow_patch is not None) == bool(all(label.xyann)) for label in labels
               if math.hypot(*label.xyann) < 15), [(t.get_text(), t.xyann) for t in labels]


def test_two_words_at_one_point_get_a_label_each_apart(tok, table):
    cat, big = tid(tok, " cat"), tid(tok, " Cat")
    table[big] = table[cat]  # identical vectors: one point
    words = ["cat", "Cat", "dog", "horse", "good", "bad", "Monday"]
    placed, points, *_ = wm.word_map_points(table, tok, words)
    assert torch.equal(points[placed.index("cat")], points[placed.index("Cat")])
    assert_labels_apart(wm.word_map(table, tok, words)[0], words)


def crowded(n: int, seed: int = 0) -> torch.Tensor:
    """n - 2 points in a tight cluster beside two far ones: (n, 2)."""
    g = torch.Generator().manual_seed(seed)
    return torch.cat([torch.randn(n - 2, 2, generator=g) * 0.02, torch.tensor([[1.0, 1.0], [-1.0, 0.8]])])


@pytest.mark.parametrize("points", [crowded(20), crowded(wm.MAX_MAP_WORDS, 1), torch.zeros(wm.MAX_MAP_WORDS, 2),
                                    torch.linspace(0, 1, wm.MAX_MAP_WORDS)[:, None] * torch.tensor([1.0, 0.0])],
                         ids=["cluster of 18", "cluster of 28", "30 at one point", "30 in a row"])
def test_a_crowded_word_map_keeps_its_labels_apart(points):
    """Many words close together (with more around them than the near places hold): no two labels touch
    (the labels next to their points overlapped: 23 pairs of 20 words in a cluster); some are placed further out,
    with a line to their point."""
    words = [f"word{i}" for i in range(len(points))]
    fig = wm._map_figure((words, points, (0.3, 0.1), [], [1] * len(words)))
    assert_labels_apart(fig, words)
    led = {label.get_text() for label in fig.axes[0].texts if label.arrow_patch is not None}
    assert len(led) >= 8


def test_the_lone_words_of_a_crowded_map_keep_their_label_beside_them():
    words = [f"word{i}" for i in range(18)] + ["far", "away"]
    fig = wm._map_figure((words, crowded(20), (0.3, 0.1), [], [1] * 20))
    beside = {label.get_text() for label in fig.axes[0].texts if label.arrow_patch is None}
    assert {"far", "away"} <= beside


def test_a_map_too_crowded_for_its_labels_still_draws_each_inside_the_axes():
    """30 words of 18 characters at one point: more than the places around it hold. Each label still takes a place
    inside the axes, the one that covers least (some labels touch): never two on one place beside the point (9 of
    the 8 places there were taken), the others further out, with a line."""
    words = [f"{'x' * 16}{i:02d}" for i in range(wm.MAX_MAP_WORDS)]
    mapped = (words, torch.zeros(len(words), 2), (0.3, 0.1), [], [1] * len(words))
    labels, _ = drawn_labels(wm._map_figure(mapped), words)
    assert sum(label.arrow_patch is not None for label in labels) >= len(words) - len(wm._OFFSETS)
