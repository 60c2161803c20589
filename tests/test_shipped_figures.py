"""The figures shipped in assets/ are drawn in today's palette (`train.reporting`): none shows a colour that the
palette retired for being under 3:1 against white (WCAG 1.4.11). A figure whose runs are gone is drawn again from
the record shipped beside it, with one command (`REDRAWN`)."""
import importlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from train import reporting
from helpers import refused

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets"
FOLDERS = ("pretrain-probes", "masking-ablation", "mini-roberta-sst2", "mini-roberta-mlm")  # the experiments'
RETIRED = {  # a colour of an older palette -> why it went (train/reporting.py names it where it says what replaced it)
    "#E69F00": "Okabe and Ito's orange: 2.2:1 against white",
    "#56B4E9": "Okabe and Ito's sky blue: 2.3:1 against white",
}
TOLERANCE = 2  # of 255, per channel: the colour itself, not a line's antialiased edge blending it with the white
NOTICEABLE = 10  # pixels: a legend's line or one marker of a line is several times that
EXEMPT = {  # a shipped figure that cannot be drawn again from what is shipped -> why
    "mini-roberta-mlm/curves.png": "the training logs of the runs averaged into the shipped MLM are gone (its folder "
                                   "ships metrics.json, not log.jsonl): the next MLM release draws it anew",
}
VISIBLE = 32  # of 255, in any channel: a pixel that changed, not a glyph's edge antialiased by another font build
REDRAW_DRIFT = 0.002  # the share of a redrawn figure's pixels that may be VISIBLE-ly off the shipped one's
# a shipped figure -> the record shipped beside it, and the command that draws the figure again from it, in place
# (`python -m MODULE WORDS...`, {} the folder)
REDRAWN = {
    "pretrain-probes/curves.png": ("results.json", "train.probes", "--redraw", "{}"),
    "masking-ablation/curves.png": ("results.json", "train.ablation_figure", "{}"),
    **{f"mini-roberta-sst2/{name}.png": (f"{name}.json", "train.summarize", "--redraw", f"{{}}/{name}.json")
       for name in ("arms", "phase4", "phase5", "phase6", "screen")},
}


def shipped_figures() -> list[str]:
    return [png.relative_to(ASSETS).as_posix() for folder in FOLDERS for png in sorted((ASSETS / folder).glob("*.png"))]


def retired_pixels(png: Path) -> dict[str, int]:
    """How many pixels of `png` are each retired colour (within TOLERANCE)."""
    from matplotlib.colors import to_rgb

    pixels = np.asarray(Image.open(png).convert("RGB"), dtype=int)
    return {colour: int((np.abs(pixels - np.round(np.array(to_rgb(colour)) * 255)).max(-1) <= TOLERANCE).sum())
            for colour in RETIRED}


def test_retired_is_every_colour_the_palette_names_but_no_longer_draws():
    """train/reporting.py names each colour it retired beside the one that replaced it: each is looked for here
    (a colour retired later is too), and none is a colour the palette still draws."""
    named = {code.upper() for code in re.findall(r"#[0-9A-Fa-f]{6}\b", Path(reporting.__file__).read_text("utf-8"))}
    assert named - set(reporting.LINE_COLOURS) == set(RETIRED)


@pytest.mark.parametrize("figure", shipped_figures())
def test_no_shipped_figure_shows_a_retired_colour(figure):
    found = {colour: n for colour, n in retired_pixels(ASSETS / figure).items() if n > NOTICEABLE}
    if figure in EXEMPT:
        assert found, f"{figure} shows no retired colour any more: take it out of EXEMPT"
        pytest.skip(EXEMPT[figure])
    assert not found, f"{figure} is drawn with retired colours ({found} pixels; {[RETIRED[c] for c in found]}): " \
                      "draw it again (REDRAWN)"


def test_every_figure_redrawn_or_exempt_is_shipped():
    assert set(REDRAWN) | set(EXEMPT) <= set(shipped_figures())


@pytest.mark.parametrize("figure", REDRAWN)
def test_a_shipped_figure_is_drawn_again_from_its_shipped_record(figure, tmp_path, capsys):
    """The figure's command, in a folder holding a copy of its record alone, draws the figure again there (from
    the record: no run is read), at the shipped figure's size, in today's palette, and it is the shipped figure.

    This checked only the size and the palette, so a redraw that plotted wrong numbers (bars at 100 minus the
    accuracy, every loss curve at the seeds' maximum) or no data at all passed. Now the redrawn pixels are compared
    with the shipped ones: here they are identical, and the bound (a share of pixels visibly different, REDRAW_DRIFT)
    leaves room only for another matplotlib or font build's antialiasing, far below what a wrong value moves."""
    shipped = ASSETS / figure
    record, module, *words = REDRAWN[figure]
    shutil.copyfile(shipped.parent / record, tmp_path / record)
    assert importlib.import_module(module).main([word.format(tmp_path) for word in words]) == 0
    redrawn = tmp_path / shipped.name
    assert f"drew {redrawn} again" in capsys.readouterr().out and redrawn.is_file()
    assert Image.open(redrawn).size == Image.open(shipped).size
    assert not any(n > NOTICEABLE for n in retired_pixels(redrawn).values())
    new, old = (np.asarray(Image.open(png).convert("RGB"), dtype=int) for png in (redrawn, shipped))
    differ = float((np.abs(new - old).max(-1) > VISIBLE).mean())
    assert differ < REDRAW_DRIFT, f"{figure} redrawn differs from the shipped one in {differ:.2%} of its pixels"


@pytest.mark.parametrize("figure", ["pretrain-probes/curves.png", "masking-ablation/curves.png",
                                    "mini-roberta-sst2/arms.png"])
def test_a_redraw_refuses_a_missing_or_foreign_record_in_one_line(figure, tmp_path, capsys):
    """No record, or a JSON that is not the script's (another script's record): one `error:` line naming the file,
    exit 2, nothing drawn (not a KeyError's traceback from inside the figure)."""
    record, module, *words = REDRAWN[figure]
    main, argv = importlib.import_module(module).main, [word.format(tmp_path) for word in words]
    refused(main, argv, capsys, record)
    (tmp_path / record).write_text('{"arms": {"x": {"n": 1}}}', encoding="utf-8")
    refused(main, argv, capsys, record, "not")
    # the script's outline with insides the figure cannot read (a probe with no points, an arm with no seeds, an arm
    # with no runs): a KeyError from deep in the figure was a traceback
    inside = {"pretrain-probes/curves.png": {"p": {"curve": [{"tokens": 1}]}},
              "masking-ablation/curves.png": {"arms": {"x": {"n": 1}}, "setup": {}},
              "mini-roberta-sst2/arms.png": {"a": {"stats": {}}}}[figure]
    (tmp_path / record).write_text(json.dumps(inside), encoding="utf-8")
    assert "KeyError" in refused(main, argv, capsys, record, "not")
    assert not (tmp_path / Path(figure).name).exists()
