"""Screenshots of the app with the shipped models, for the README and the Space's card.

    python -m scripts.screenshots     # -> assets/screenshots/{fill-mask,sentiment,attention,tokens,embeddings,
                                      #    masking,layers}.png

Starts `app.py` (the models of `MLM_MODEL` / `SENTIMENT_MODEL`, default the shipped ones; online, whatever
HF_HUB_OFFLINE says here, so that the model boxes' hints are an online server's), opens each tab in
headless Chromium (`scripts.browser`) at 1280 x 900, waits until the tab's own example is computed, and saves
the visible page; then the fill-mask tab's "Layer by layer" accordion, opened on its first example, alone.
Exit code 2 without Chromium or Playwright, when --out is a file, when no app answers at --url, or when a model
the app would serve is not available; 1 when a tab does not show its example (then no picture is replaced: they
are taken aside and moved into --out together). The Tokens tab's examples hold Japanese and an emoji, which a
visitor's browser draws: here too, with Debian's `fonts-noto-cjk` and `fonts-noto-color-emoji` (else boxes).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from scripts.app_process import ROOT, AppProcess, check_app_url
from scripts.browser import CHROMIUM, TIMEOUT_MS, launch
from train.arguments import script_parser
from train.runtime import exit_code, output_folder, report_user_error

VIEWPORT = {"width": 1280, "height": 900}

# tab name, file name, the example to click ("" = the tab's default), an element that shows once it is
# computed, and a text that element then contains ("" = being visible is enough)
SHOTS = [
    ("Fill mask", "fill-mask", "This movie was <mask>.", "#fm-filled", "This movie was"),
    ("Sentiment", "sentiment", "The visuals are stunning, but the story is a boring mess.", "#st-words", "visuals"),
    ("Attention", "attention", "", "#at-heads svg.hv", ""),
    ("Tokens", "tokens", "", "#tk-merges table.bpe-table", ""),
    ("Embeddings", "embeddings", "", "#em-analogy table.ev-table", ""),
    ("Masking", "masking", "", "#mk-plot img", ""),
]
# pictures taken with the page scrolled to an element, not at its top: the masking tab's controls and examples fill
# the first screen, and its picture is of what each scheme showed and the sentence epoch by epoch below it
SCROLLED_TO = {"masking": "#mk-stats"}
LAYERS = ("layers", "Paris is the capital of <mask>.")  # file name, the example it shows layer by layer
# The app is started online, as a Space runs: offline mode (HF_HUB_OFFLINE, or TRANSFORMERS_OFFLINE, which the Hub
# library reads too) is the machine's that takes the pictures, and would add its note to every model box's hint.
# A Hub this machine cannot reach changes nothing here: the shipped models are folders, and a Hub model is only
# looked for when one is chosen.
ONLINE = {"HF_HUB_OFFLINE": None, "TRANSFORMERS_OFFLINE": None}


def take(url: str, out: Path, browser=None) -> list[Path]:
    """One screenshot per entry of SHOTS into `out`; `browser`: a launched Playwright browser to reuse."""
    if browser is None:
        from playwright.sync_api import sync_playwright
        with sync_playwright() as p:
            browser = launch(p)
            try:
                return take(url, out, browser)
            finally:
                browser.close()
    from playwright.sync_api import expect

    out.mkdir(parents=True, exist_ok=True)
    written = []
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    expect(page.locator("#fm-view .fm-mask")).to_have_count(1, timeout=TIMEOUT_MS)  # the load events ran
    for tab, name, example, ready, contains in SHOTS:
        page.get_by_role("tab", name=tab, exact=True).click()
        if example:
            page.get_by_text(example, exact=True).first.click()
        expect(page.locator(ready).first).to_be_visible(timeout=TIMEOUT_MS)
        if contains:
            expect(page.locator(ready).first).to_contain_text(contains, timeout=TIMEOUT_MS)
        page.wait_for_timeout(500)  # let plots and bars settle
        page.evaluate("window.scrollTo(0, 0)")  # clicking an example scrolls down to it
        if name in SCROLLED_TO:
            page.locator(SCROLLED_TO[name]).evaluate("e => window.scrollTo(0, e.getBoundingClientRect().top - 16)")
        page.wait_for_timeout(200)
        path = out / f"{name}.png"
        page.screenshot(path=str(path))
        written.append(path)
    name, example = LAYERS
    page.get_by_role("tab", name="Fill mask", exact=True).click()
    page.get_by_text(example, exact=True).first.click()
    expect(page.locator("#fm-filled").first).to_contain_text(example.split("<mask>")[0].strip(), timeout=TIMEOUT_MS)
    answer = page.locator("#fm-view .fm-word").first.inner_text()  # the example's top prediction
    page.locator("#fm-layers-box").get_by_text("Layer by layer").click()
    expect(page.locator("#fm-layers .ll-mask h2")).to_contain_text(answer, timeout=TIMEOUT_MS)  # not the last one's
    page.wait_for_timeout(300)
    path = out / f"{name}.png"
    page.locator("#fm-layers-box").screenshot(path=str(path))
    written.append(path)
    page.close()
    return written


def main(argv=None) -> int:
    parser = script_parser("scripts.screenshots", __doc__)  # the docstring's summary above the options, once
    parser.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshots",
                        help="folder of the PNG files (default: assets/screenshots)")
    parser.add_argument("--url", help="a running app instead of starting one")
    args = parser.parse_args(argv)
    try:  # were tracebacks, after the browser had started: FileExistsError, net::ERR_CONNECTION_REFUSED
        output_folder(args.out)
    except OSError as err:
        return report_user_error(err)
    if args.url and (problem := check_app_url(args.url)):  # one line, not a Playwright traceback
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if not os.path.exists(CHROMIUM):
        print(f"error: no Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    try:
        from playwright.sync_api import Error as PlaywrightError
    except ImportError:
        print("error: Playwright is not installed (pip install -r requirements-test.txt)", file=sys.stderr)
        return 2
    if not args.url:  # a mistyped MLM_MODEL: said before the browser starts
        from demo.models import KINDS, load_model

        for key in KINDS:
            if not (loaded := load_model(key)).available:
                print(f"error: {loaded.console_error}", file=sys.stderr)
                return 2
    args.out.mkdir(parents=True, exist_ok=True)
    # taken into a folder aside, moved in together: a run that fails replaces no picture (a set is one state)
    with tempfile.TemporaryDirectory(prefix=".screenshots-", dir=args.out) as staging:
        try:
            if args.url:
                taken = take(args.url, Path(staging))
            else:
                with AppProcess(ONLINE) as app:
                    taken = take(app.url, Path(staging))
        except (AssertionError, PlaywrightError, RuntimeError, TimeoutError) as err:  # the app or a tab failed
            print(f"error: no screenshot was written, the app did not show every tab's example: {err}",
                  file=sys.stderr)
            return 1
        paths = [args.out / path.name for path in taken]
        for path, target in zip(taken, paths):
            os.replace(path, target)
    for path in paths:
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
