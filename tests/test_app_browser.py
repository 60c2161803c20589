"""The app in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by Playwright.

Visits every tab, runs an example in each, checks what is rendered, and checks that HTML typed into a text
box is shown as text (no dialog fires). Screenshots go to tests/screenshots/ (git-ignored).
"""
import io
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from demo.masking_view import PREDICTION_COLUMNS
from scripts.app_process import AppProcess
from scripts.browser import CHROMIUM, TIMEOUT_MS, launch
from demo import head_view
from demo.byte_level import to_byte_level
from demo.formatting import format_probability
from demo.validation import MAX_EPOCHS
from train import token_counts

SCREENSHOTS = Path(__file__).parent / "screenshots"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    # CI (.ci/run, REQUIRE_BROWSER=1) fails instead: these tests must not vanish there without a word
    pytest.mark.skipif(not os.path.exists(CHROMIUM) and not os.environ.get("REQUIRE_BROWSER"),
                       reason=f"no Chromium at {CHROMIUM} (apt-get install chromium, or CHROMIUM=/path/to/it)"),
    # Chromium itself crashing (CI once: "Target crashed" in a full-page screenshot, the browser gone with it) runs
    # the test once more on a new browser; a failed check, or a second crash, fails it (pytest-rerunfailures)
    pytest.mark.flaky(reruns=1, only_rerun=["Target crashed", "TargetClosedError"]),
]
if os.environ.get("REQUIRE_BROWSER"):  # CI: a missing Playwright fails too, as a missing Chromium does
    import playwright.sync_api as sync_api
else:
    sync_api = pytest.importorskip("playwright.sync_api")
sync_api.expect.set_options(timeout=TIMEOUT_MS)  # a loaded 2-core machine can take more than the default 5 s


@pytest.fixture(scope="module")
def app(tiny_mlm_dir, tiny_clf_dir, train_files, tmp_path_factory):
    # how often the tiny models' "pretraining text" held each token, as the shipped file says it for the shipped ones
    counts = tmp_path_factory.mktemp("counts") / "token-counts.json"
    assert token_counts.main(["--tokenizer", str(tiny_mlm_dir), "--source", f"tiny text={train_files / 'corpus.txt'}",
                              "--source", f"tiny reviews={train_files / 'valid.txt'}",
                              "--out", str(counts), "--no-progress"]) == 0
    with AppProcess({"MLM_MODEL": str(tiny_mlm_dir), "SENTIMENT_MODEL": str(tiny_clf_dir), "TOKEN_COUNTS": str(counts),
                     "HF_HUB_OFFLINE": "1"}) as running:  # a Hub model is never fetched, whatever the network
        yield running


class Chromium:
    """The module's headless Chromium and its shared page, each opened anew once it has died: Chromium crashed once in
    CI, and every later test then failed on the closed browser. A crash also prints what the machine had left."""

    def __init__(self, playwright, url):
        self.playwright, self.url = playwright, url
        self._browser = None
        self._pages = {}  # a colour scheme ("light", "dark") -> the page its tests share

    def browser(self):
        if self._browser is None or not self._browser.is_connected():
            self._browser = launch(self.playwright)
            self._browser.on("disconnected", lambda _: print(f"Chromium closed; {machine_left()}"))
        return self._browser

    def page(self, scheme="light"):
        """The 1280 x 900 page on the app that the `page` tests share, or with "dark" the one the dark-mode tests
        share (the system's dark theme, which Gradio follows); every JavaScript dialog (alert, confirm) is recorded
        and dismissed."""
        browser = self.browser()
        old = self._pages.get(scheme)
        if old is None or old.is_closed() or old.crashed or old.context.browser is not browser:
            page = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
            page.set_default_timeout(TIMEOUT_MS)
            page.dialogs, page.crashed = [], False
            page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
            page.on("crash", lambda _: (setattr(page, "crashed", True), print(f"page crashed; {machine_left()}")))
            page.goto(self.url)
            page.get_by_role("heading", name="RoBERTa from scratch").wait_for()
            if scheme == "dark":
                page.wait_for_function("() => document.body.classList.contains('dark')")
            self._pages[scheme] = page
        return self._pages[scheme]

    def close_page(self, scheme="light"):
        """After a failed test: whatever it left on the shared page (an open list, a hung renderer) is not the next
        test's start."""
        page = self._pages.pop(scheme, None)
        if page is not None and not page.is_closed():
            page.context.close()

    def close_pages_opened_since(self, contexts: set):
        """The pages (contexts) a test opened itself and left open, as a failed check leaves them: a renderer each,
        held for the rest of the module otherwise."""
        if self._browser is not None and self._browser.is_connected():
            shared = [page.context for page in self._pages.values()]
            for context in [c for c in self._browser.contexts if c not in contexts and c not in shared]:
                context.close()

    def close(self):
        if self._browser is not None and self._browser.is_connected():
            self._browser.close()


def machine_left():
    """Free memory and the space left where Chromium keeps its shared memory (Playwright starts it with
    --disable-dev-shm-usage: the temporary folder), for a crash's report."""
    try:
        with open("/proc/meminfo") as meminfo:
            memory = next(f"{int(line.split()[1]) >> 10} MiB" for line in meminfo if line.startswith("MemAvailable"))
    except (OSError, StopIteration):  # not Linux
        memory = "not known"
    tmp = tempfile.gettempdir()
    return f"memory available {memory}, {shutil.disk_usage(tmp).free >> 20} MiB free in {tmp}"


@pytest.fixture(scope="module")
def chromium(app):
    SCREENSHOTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        chromium = Chromium(p, app.url)
        yield chromium
        chromium.close()


@pytest.fixture
def browser(chromium):
    browser = chromium.browser()
    before = set(browser.contexts)
    yield browser
    chromium.close_pages_opened_since(before)


def shared_page(chromium, request, scheme):
    """The page the module's tests of a colour scheme share, opened again after a test on it failed (or Chromium
    crashed)."""
    yield chromium.page(scheme)
    if getattr(request.node, "call_failed", True):  # conftest.py's pytest_runtest_makereport records it
        chromium.close_page(scheme)


@pytest.fixture
def page(chromium, request):
    """One page for the module's tests (light)."""
    yield from shared_page(chromium, request, "light")


@pytest.fixture
def dark_page(chromium, request):
    """One page for the module's dark-mode tests."""
    yield from shared_page(chromium, request, "dark")


@pytest.fixture
def themed_page(chromium, request, theme):
    """The shared page of the test's `theme` parameter ("light" or "dark")."""
    yield from shared_page(chromium, request, theme)


def open_tab(page, name):
    page.get_by_role("tab", name=name).click()


def check_heading_levels(page):
    """The visible headings go h1 (the page's title) -> h2 (a tab's parts) -> h3, never skipping a level (a screen
    reader's list of headings is its outline of the page)."""
    levels = page.evaluate("() => [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]"
                           ".filter(h => h.offsetParent !== null).map(h => +h.tagName[1])")
    assert levels[0] == 1 and all(b - a <= 1 for a, b in zip(levels, levels[1:])), levels


def shot(page, name):
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


RECORD_ANNOUNCEMENTS = """() => { window.announced = [];  // every announcement, however soon the next one replaces it
  new MutationObserver(() => window.announced.push(document.querySelector('#sr-live').textContent))
    .observe(document.querySelector('#sr-live'), {childList: true, characterData: true, subtree: true}); }"""


def record_announcements(page):
    """From now on, every announcement in window.announced; once page.js has made the live region (it may run after
    the first answer is drawn on a page just opened)."""
    page.locator("#sr-live").wait_for(state="attached")
    page.evaluate(RECORD_ANNOUNCEMENTS)


def test_every_tab_opens_with_its_default_example_computed(app, browser):
    """No click: each tab shows its default example's result, a "what to try" line and the model note."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
    sync_api.expect(page.locator("#fm-filled")).to_contain_text("Paris is the capital of")
    # no slider reset button: it set the value without rerunning the tab (the results then did not match it)
    assert page.locator("[data-testid=reset-button]").count() == 0
    sync_api.expect(page.locator(".model-note").first).to_contain_text("About this model")
    sync_api.expect(page.locator(".hint").first).to_contain_text("Try")
    open_tab(page, "Sentiment")
    sync_api.expect(page.locator("#st-label [data-testid=label-output-value]")).to_have_text(
        re.compile("positive|negative"))
    sync_api.expect(page.locator("#st-words")).to_contain_text("gorgeous")
    open_tab(page, "Attention")
    sync_api.expect(page.locator("#at-heads svg.hv")).to_be_visible()  # the head view, the first sub-tab
    open_tab(page, "Tokens")
    sync_api.expect(page.locator("#tk-view .bpe-chip").first).to_be_visible()
    sync_api.expect(page.locator("#tk-merges table.bpe-table")).to_be_visible()
    open_tab(page, "Embeddings")
    sync_api.expect(page.locator("#em-neighbours table.ev-table")).to_be_visible()
    sync_api.expect(page.locator("#em-analogy table.ev-table")).to_be_visible()
    sync_api.expect(page.locator("#em-map img")).to_be_visible()
    sync_api.expect(page.locator("#em-positions img")).to_be_visible()
    sync_api.expect(page.locator("#em-probe")).to_contain_text("How often is the analogy right? Of 43 test")
    # the field labels reach 4.5:1, and a text box shows a focus ring a person can see
    assert page.evaluate(CONTRAST_JS, "#tab-embeddings span[data-testid=block-info]") >= 4.5
    page.locator("#em-word textarea").focus()
    ring = page.locator("#em-word textarea").evaluate("e => [getComputedStyle(e).outlineStyle, "
                                                      "getComputedStyle(e).outlineWidth]")
    assert ring == ["solid", "2px"], ring
    open_tab(page, "Masking")
    sync_api.expect(page.locator("#mk-table table.mk-table tbody tr")).to_have_count(12)
    assert page.locator(".input-error:visible").count() == 0
    page.close()


def test_fill_mask_example(page):
    open_tab(page, "Fill mask")
    page.get_by_text("The <mask> sat on the <mask> all day.", exact=True).click()  # two masks
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(2)
    sync_api.expect(page.locator("#fm-view")).to_contain_text("<mask> 2")
    sync_api.expect(page.locator("#fm-filled")).to_contain_text("sat on the")
    sync_api.expect(page.locator("#fm-filled")).to_contain_text("<mask> 2")  # as typed, not "<MASK> 2"
    assert "%" in page.locator("#fm-view .fm-score").first.inner_text()
    assert page.locator("#fm-view .fm-bar").first.bounding_box()["width"] > 100  # the top answer's bar is long
    # how often the pretraining text held each answer (TOKEN_COUNTS: counts for the tiny model's vocabulary)
    seen = page.locator("#fm-view td.fm-seen").first
    assert re.match(r"(never|[\d,.]+[kM]?)( · (only in|[\d.]+× commoner in) tiny (text|reviews)| · about as common in "
                    r"both)?$", seen.inner_text()), seen.inner_text()
    assert re.match("“[^”]+”: ", seen.get_attribute("title")) and "tiny reviews" in seen.get_attribute("title")
    # the same counts in full, for a touch screen: a closed <details> under each mask's table, opened by a tap
    in_full = page.locator("#fm-view details.fm-counts").first
    sync_api.expect(in_full.locator("li").first).to_be_hidden()
    in_full.locator("summary").click()
    sync_api.expect(in_full.locator("li").first).to_have_text(seen.get_attribute("title"))
    # a screen reader hears the new answer: a polite live region gets its summary
    live = page.locator("#sr-live")
    assert live.get_attribute("aria-live") == "polite" and live.get_attribute("role") == "status"
    sync_api.expect(live).to_contain_text("Completed sentence:")
    sync_api.expect(live).to_contain_text("sat on the")
    assert "top prediction for each mask" not in live.inner_text()  # the answer, not the component's label again
    # layer by layer (closed until opened): the same two masks, one row per layer after the embeddings', the
    # last row's top guess the completed sentence's word
    toggle = page.locator("#fm-layers-box button.label-wrap")
    sync_api.expect(toggle).to_have_attribute("aria-expanded", "false")  # a screen reader hears it is closed
    page.locator("#fm-layers-box").get_by_text("Layer by layer").click()
    sync_api.expect(toggle).to_have_attribute("aria-expanded", "true")
    sync_api.expect(page.locator("#fm-layers .ll-mask")).to_have_count(2)
    rows = page.locator("#fm-layers .ll-mask").first.locator("tr")
    sync_api.expect(rows).to_have_count(1 + 1 + 2)  # the header, the embeddings, the tiny model's 2 layers
    last_guess = rows.last.locator(".ll-guess").first
    sync_api.expect(last_guess).to_have_class(re.compile("ll-answer"))
    word = last_guess.inner_text().rsplit(" ", 1)[0]
    assert word in page.locator("#fm-filled").inner_text()
    check_heading_levels(page)
    shot(page, "1-fill-mask")


def test_fill_mask_compare(app, browser):
    """Compare with another model: the tab's own model is not offered (typed in, it is refused next to the
    button), and a Hub model this server cannot fetch says so after its loading note, the tab's own results
    untouched. (A page of its own: the messages it leaves would be the shared page's.)"""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    sync_api.expect(page.locator("#fm-view .fm-mask").first).to_be_visible()
    # the page's own answer once its page-load event has finished (the box holds the default's HTML before, with the
    # event's progress overlay on it)
    sync_api.expect(page.locator("#fm-view .progress-text")).to_have_count(0)
    answer = page.locator("#fm-view").inner_html()
    page.locator("#fm-compare-box").get_by_text("Compare with another model").click()
    box = page.locator("#fm-other input")
    sync_api.expect(box).to_have_value("FacebookAI/roberta-base")
    box.click()
    sync_api.expect(page.get_by_role("option", name="FacebookAI/roberta-base")).to_be_visible()
    sync_api.expect(page.get_by_role("option", name="ours: this server's fill-mask model")).to_have_count(0)
    box.fill("shipped")  # typed in all the same
    box.press("Enter")
    page.locator("#fm-compare-btn").click()
    error = page.locator("#fm-compare-error .input-error")
    sync_api.expect(error).to_contain_text("Choose a model to compare with other than the one this tab runs")
    box.click()
    box.fill("")
    page.get_by_role("option", name="FacebookAI/roberta-base").click()
    page.locator("#fm-compare-btn").click()
    sync_api.expect(error).to_contain_text("cannot be reached from this server (HF_HUB_OFFLINE is set)")
    sync_api.expect(page.locator("#fm-compare-status")).to_have_text("")  # the loading note is gone
    assert page.locator("#tab-fill .input-error-box:visible").count() == 0  # the tab's own box stays clear
    assert page.locator("#fm-view").inner_html() == answer  # and its answer stays, not greyed
    sync_api.expect(page.locator("#fm-view")).to_have_css("filter", "none")
    check_heading_levels(page)
    shot(page, "1-fill-mask-compare")
    page.close()


def test_sentiment_example(page):
    open_tab(page, "Sentiment")
    page.get_by_text("The acting was not bad at all.", exact=True).click()
    sync_api.expect(page.locator("#st-label [data-testid=label-output-value]")).to_have_text(
        re.compile("positive|negative"))
    # the label's class bars are buttons that do nothing here: no Tab stop (they were two, before "Every word's push"),
    # and not heard as buttons ("button positive 95%"): groups, each with its meter named
    bars = page.locator("#st-label button")
    sync_api.expect(bars.first).to_have_attribute("tabindex", "-1")
    sync_api.expect(bars.first).to_have_attribute("role", "group")
    assert all(b.get_attribute("tabindex") == "-1" and b.get_attribute("role") == "group" for b in bars.all())
    roles = accessibility_tree(page)
    assert not [name for role, name in roles if role == "button" and re.fullmatch(r"(positive|negative) \d+%", name)]
    assert [role for role, name in roles if name in ("positive", "negative")].count("meter") == 2
    words = page.locator("#st-words")
    sync_api.expect(words).to_contain_text("bad")
    sync_api.expect(words).to_contain_text("not")
    # within the tab's own explanation: the Embeddings tab's analogy note says "how to read it" too, once drawn
    sync_api.expect(page.locator("#st-explain").get_by_text("How to read it")).to_be_visible()
    sync_api.expect(page.get_by_text("green words push towards positive")).to_be_visible()  # a worded legend
    sync_api.expect(page.get_by_text("pink words push towards negative")).to_be_visible()
    assert page.locator("#st-words [data-testid='highlighted-text:color-legend']").count() == 0  # not -1/0/+1
    check_word_colours(page)
    page.locator("#st-explain").get_by_text("Every word's push, in numbers").click()  # its push column: numbers
    check_number_columns(page, "#st-explain")
    shot(page, "2-sentiment")
    # What if? the word that pushed most, removed or negated: a table, the change struck through
    record_announcements(page)
    page.get_by_role("button", name="What if? (counterfactual)").click()
    whatif = page.locator("#st-whatif")
    sync_api.expect(whatif.locator("table")).to_be_visible()
    sync_api.expect(whatif).to_contain_text("original")
    assert whatif.locator("del").count() >= 1 and "points" in whatif.inner_text()
    page.wait_for_function("() => window.announced.some(t => t.startsWith('What if?'))")  # a screen reader hears it
    shot(page, "2b-sentiment-what-if")
    page.get_by_text("A gorgeous, funny and deeply moving film.", exact=True).click()  # a new answer clears it
    sync_api.expect(whatif.locator("table")).to_have_count(0)
    # the text edited but not classified: What if? classifies it first, so the answer, the colours and the
    # counterfactual on the page are all the edited text's
    sync_api.expect(words).to_contain_text("gorgeous")
    page.locator("#st-text textarea").fill("A dull, lifeless and painfully slow mess.")
    page.get_by_role("button", name="What if? (counterfactual)").click()
    sync_api.expect(words).to_contain_text("lifeless")
    sync_api.expect(whatif.locator("table")).to_be_visible()
    sync_api.expect(whatif).to_contain_text("lifeless")
    answer = page.locator("#st-label [data-testid=label-output-value]").inner_text().strip()
    sync_api.expect(whatif.locator("tbody tr").first).to_contain_text(answer)  # the original row's answer
    # nothing to try: What if? says so under its own button, and the text's new answer is not greyed as stale
    page.locator("#st-text textarea").fill("Wow!")
    page.get_by_role("button", name="What if? (counterfactual)").click()
    sync_api.expect(page.locator("#st-whatif-error")).to_contain_text("“Wow” is the only word")
    sync_api.expect(words).to_contain_text("Wow")
    sync_api.expect(page.locator("#st-error .input-error")).to_have_count(0)
    assert page.locator("#st-label").evaluate("e => getComputedStyle(e).filter") == "none"
    # a text that cannot be classified: said next to the text, and the What if? message goes
    page.locator("#st-text textarea").fill("<pad>")
    page.get_by_role("button", name="What if? (counterfactual)").click()
    sync_api.expect(page.locator("#st-error")).to_contain_text("no words to classify")
    sync_api.expect(page.locator("#st-whatif-error .input-error")).to_have_count(0)
    # a new answer makes What if?'s message stale: it goes (cleared in the browser, as the last table is)
    page.locator("#st-text textarea").fill("Wow!")
    page.get_by_role("button", name="What if? (counterfactual)").click()
    sync_api.expect(page.locator("#st-whatif-error")).to_contain_text("“Wow” is the only word")
    page.get_by_text("A dull, lifeless and painfully slow mess.", exact=True).click()
    sync_api.expect(words).to_contain_text("lifeless")
    sync_api.expect(page.locator("#st-whatif-error")).to_be_hidden()


# a gr.Label's rows as Gradio draws them (the meters' values: probabilities that format_probability writes in each of
# its ways, "3.12%" for 0.03125 where JavaScript would round the tie up), for the page's script to rewrite
FAKE_LABEL = """values => { const box = document.createElement('div'); box.id = 'fake-label';
  box.innerHTML = values.map(v => `<button class="confidence-set"><meter min="0" max="1" value="${v}"
    aria-valuenow="${Math.round(v * 100)}"></meter><dl><dt>x</dt><dd class="confidence">${Math.round(v * 100)}%</dd>
    </dl></button>`).join(''); document.body.appendChild(box); }"""


def test_the_answer_box_writes_each_probability_as_the_text_beside_it(page):
    """gr.Label wrote "negative 80%" above an explanation and a What if? that wrote the same probability "80.1%".
    Each row reads as the explanation writes it (format_probability, its meter's aria-valuetext too), and still
    after the next text's answer redraws the box; any value, as format_probability writes it."""
    open_tab(page, "Sentiment")
    text, words = page.locator("#st-text textarea"), page.locator("#st-words")
    for review, word in (("I don't hate this movie.", "hate"), ("A dull, lifeless and painfully slow mess.", "dull")):
        text.fill(review)
        text.press("Enter")
        sync_api.expect(words).to_contain_text(word)
        answer = page.locator("#st-label [data-testid=label-output-value]").inner_text().strip()
        explained = re.search(re.escape(answer) + r", (\S+%)", page.locator("#st-explain").inner_text())
        assert explained, page.locator("#st-explain").inner_text()
        row = page.locator(f"#st-label [data-testid='{answer}-confidence-set']")
        sync_api.expect(row.locator(".confidence")).to_have_text(explained[1])
        sync_api.expect(row.locator("meter")).to_have_attribute("aria-valuetext", explained[1])
        for meter in page.locator("#st-label meter").all():  # every label's row, not only the answer's
            shown = format_probability(float(meter.get_attribute("value")))
            sync_api.expect(meter).to_have_attribute("aria-valuetext", shown)
            sync_api.expect(meter.locator("xpath=..").locator(".confidence")).to_have_text(shown)
    values = [0.801234, 0.93, 0.9996, 0.99949, 1e-5, 1.36e-9, 0.03125, 0.1225, 0, 1]
    page.evaluate(FAKE_LABEL, values)
    try:
        rows = page.locator("#fake-label .confidence")
        sync_api.expect(rows).to_have_text([format_probability(v) for v in values])
        # only a meter's value changed, as Gradio leaves a row's whole percent that did not change: rewritten too,
        # at once (the script's observer answers before the next task: no other change on the page wakes it)
        shown = page.locator("#fake-label meter").first.evaluate(
            "async m => { m.setAttribute('value', '0.8049'); await null; return m.nextElementSibling.lastElementChild"
            ".textContent; }")
        assert shown == format_probability(0.8049)
    finally:
        page.evaluate("() => document.querySelector('#fake-label').remove()")


def test_an_answer_that_comes_right_after_its_tab_opens_is_announced(app, browser):
    """What if? clicked at once on a tab just opened: its answer is news (the tab's first look was taken when it
    opened, not when the page next stayed still for a moment, by which time the answer was there)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    sync_api.expect(page.locator("#fm-filled")).to_contain_text("Paris is the capital of")  # the page is loaded
    record_announcements(page)
    open_tab(page, "Sentiment")
    page.get_by_role("button", name="What if? (counterfactual)").click()
    sync_api.expect(page.locator("#st-whatif table")).to_be_visible()
    page.wait_for_function("() => window.announced.some(t => t.startsWith('What if?'))")
    page.close()


def test_a_classifier_is_named_and_announced_by_its_kind_of_labels(tiny_mlm_dir, tiny_clf_dir, browser, tmp_path):
    """A topic classifier's answer was in a box named "Sentiment", announced "Sentiment: sports (51%)", under a hint
    about negation. Chosen in the model box, it answers in a box named "Answer", the hint names its labels, and a
    screen reader hears "Answer: sports (…%)", and the tab is renamed "Classify" (the one tab, still selected); the
    served sentiment classifier chosen again names all of them as before. (The page opens named for the served
    classifier: tests/test_app_layout.py.)"""
    topic = shutil.copytree(tiny_clf_dir, tmp_path / "topic")
    config = json.loads((topic / "config.json").read_text())
    config["id2label"], config["label2id"] = {"0": "world", "1": "sports"}, {"world": 0, "sports": 1}
    (topic / "config.json").write_text(json.dumps(config))
    with AppProcess({"MLM_MODEL": str(tiny_mlm_dir), "SENTIMENT_MODEL": str(tiny_clf_dir), "APP_LOCAL_MODELS": "1",
                     "HF_HUB_OFFLINE": "1"}) as app:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(app.url)
        open_tab(page, "Sentiment")
        name, hint = page.locator("#st-label [data-testid=block-label]"), page.locator("#tab-sentiment .block.hint")
        words = page.locator("#st-words")
        sync_api.expect(name).to_have_text("Sentiment")
        sync_api.expect(page.locator("#st-label [data-testid=label-output-value]")).to_have_text("positive")
        record_announcements(page)
        box = page.locator("#st-model input")
        box.fill(str(topic))
        box.press("Enter")
        sync_api.expect(name).to_have_text("Answer")
        sync_api.expect(hint).to_contain_text("this classifier's labels are “world” and “sports”")
        sync_api.expect(words).to_contain_text("Which words push towards sports (green) or world (pink)")
        page.wait_for_function("() => window.announced.some(t => /^Answer: sports \\([\\d.]+%\\)/.test(t))")
        tab = page.locator("#tab-sentiment-button")
        sync_api.expect(tab).to_have_text("Classify")
        sync_api.expect(tab).to_have_attribute("aria-selected", "true")
        sync_api.expect(page.get_by_role("tab", name="Sentiment")).to_have_count(0)
        box.click()
        page.get_by_role("option", name="ours: this server's classifier").click()
        sync_api.expect(name).to_have_text("Sentiment")
        sync_api.expect(hint).to_contain_text("Try the negation")
        sync_api.expect(words).to_contain_text("Which words push towards positive (green) or negative (pink)")
        page.wait_for_function("() => window.announced.some(t => /^Sentiment: positive \\([\\d.]+%\\)/.test(t))")
        sync_api.expect(tab).to_have_text("Sentiment")
        page.close()


def test_attention_example(page):
    open_tab(page, "Attention")
    heads = page.locator("#at-heads")
    # another text first, so that the example's click is seen to redraw (the page opens on that example)
    page.locator("#at-text textarea").fill("Short.")
    page.locator("#at-text textarea").press("Enter")
    sync_api.expect(heads).to_contain_text("Short")
    page.get_by_text("The cat sat on the mat because it was tired.", exact=True).first.click()
    sync_api.expect(heads).to_contain_text("tired")
    sync_api.expect(heads.locator("svg.hv")).to_be_visible()
    sync_api.expect(page.locator("#at-notes")).to_contain_text("tokens")
    rows = heads.locator(".hv-r")
    sync_api.expect(rows.first).to_be_attached()
    n_rows = rows.count()
    assert n_rows > 5 and heads.locator(".hv-k text").count() == n_rows  # both columns, every token
    # the view takes its box's width (it took 418 of 1192 px), up to its widest, its lines growing; labels unscaled
    box, svg = (heads.locator(selector).bounding_box()["width"] for selector in (".hv-box", "svg.hv"))
    assert svg >= min(0.6 * box, head_view.MAX_WIDTH), (svg, box)
    assert heads.locator(".hv-k text").first.evaluate("e => e.getBoundingClientRect().height") >= 0.9 * head_view.FONT
    # hover over a token on the left: its lines and values show, no other row's
    row = rows.nth(2)
    row.locator(".hv-q").hover()
    sync_api.expect(row.locator(".hv-v")).to_be_visible()
    assert rows.nth(3).locator(".hv-v").is_hidden()
    assert "attends to" in row.locator("title").text_content()
    shot(page, "3-attention-head-view")
    # a layer change redraws the visible view (the head view)
    before = heads.inner_html()
    page.locator("#at-layer input").click()
    page.get_by_role("option", name="1", exact=True).click()
    sync_api.expect(heads).not_to_contain_text("Layer 2,")
    sync_api.expect(heads).to_contain_text("Layer 1,")
    assert heads.inner_html() != before
    # the other views are drawn when their sub-tab opens
    for name, box in (("Heatmap", "#at-heat"), ("All heads of the layer", "#at-grid"),
                      ("Rollout across layers", "#at-roll"), ("Where one token attends", "#at-bars")):
        page.get_by_role("tab", name=name).click()
        sync_api.expect(page.locator(f"{box} img")).to_be_visible()
        # each figure with its text version: the heads' roles, or each token's weights
        text = page.locator(f"{box}-text")
        sync_api.expect(text.locator("table").first).to_be_attached()
        if box == "#at-grid":  # the layer's heads, then every layer at a glance (closed)
            sync_api.expect(text.locator("table").first.locator("tbody tr")).to_have_count(4)  # the tiny model's
            sync_api.expect(text).to_contain_text("In layer 1, ")
            text.get_by_text("Every layer at a glance").click()
            sync_api.expect(text.locator("table").nth(1).locator("tbody tr")).to_have_count(2)  # its 2 layers
        else:
            summary = text.locator("summary")
            sync_api.expect(summary).to_have_text("The figure as text")
            summary.click()
            sync_api.expect(text.locator("tbody tr")).to_have_count(n_rows)
    page.get_by_role("tab", name="Heatmap").click()
    image = page.locator("#at-heat img")
    sync_api.expect(image).to_be_visible()
    shot(page, "3-attention")
    # ... and a layer change redraws the heatmap while it is the visible view
    before = image.get_attribute("src")
    page.locator("#at-layer input").click()
    page.get_by_role("option", name="2", exact=True).click()
    sync_api.expect(image).not_to_have_attribute("src", before)
    # the text version opened above is redrawn for layer 2, and stays open
    sync_api.expect(page.locator("#at-heat-text caption")).to_contain_text("layer 2")
    details = page.locator("#at-heat-text details")
    sync_api.expect(details).to_have_attribute("open", "")
    details.locator("summary").click()  # closed by the visitor: it stays closed through the next redraw
    page.locator("#at-layer input").click()
    page.get_by_role("option", name="1", exact=True).click()
    sync_api.expect(page.locator("#at-heat-text caption")).to_contain_text("layer 1")
    sync_api.expect(details).not_to_have_attribute("open", "")
    page.locator("#at-layer input").click()
    page.get_by_role("option", name="2", exact=True).click()
    page.get_by_role("tab", name="Head view").click()
    sync_api.expect(heads).to_contain_text("Layer 2,")


def test_head_view_is_one_tab_stop_that_the_arrow_keys_move(page):
    """The head view's rows are one Tab stop (up to 128 rows would be as many): the arrow keys, Home and End move
    the focus from token to token, and Tab leaves the view from any of them."""
    open_tab(page, "Attention")
    page.get_by_role("tab", name="Head view").click()
    rows = page.locator("#at-heads .hv-r")
    sync_api.expect(rows.first).to_be_attached()
    n_rows = rows.count()
    stops = page.locator('#at-heads .hv-r[tabindex="0"]')
    sync_api.expect(stops).to_have_count(1)
    focused = "() => [...document.querySelectorAll('#at-heads .hv-r')].indexOf(document.activeElement)"
    page.mouse.move(0, 0)  # a row under the mouse shows its own values, whatever has the focus
    rows.first.focus()
    for key, at in (("ArrowDown", 1), ("ArrowDown", 2), ("ArrowUp", 1), ("End", n_rows - 1), ("ArrowDown", n_rows - 1),
                    ("Home", 0), ("ArrowRight", 1)):
        page.keyboard.press(key)
        assert page.evaluate(focused) == at, key
        sync_api.expect(rows.nth(at).locator(".hv-v")).to_be_visible()  # its values show, as on hover
        assert stops.count() == 1 and rows.nth(at).get_attribute("tabindex") == "0"
    page.keyboard.press("Tab")  # out of the view, not to the next row
    assert page.evaluate(focused) == -1
    page.keyboard.press("Shift+Tab")  # back in: the row left last
    assert page.evaluate(focused) == 1


def input_messages(page, tab):
    """The messages of a tab's inputs, not of its model box: a refused model choice is said there until the next
    choice, and the page is shared (in a random order the model box's test, then on this page, left one first)."""
    return page.locator(f"#tab-{tab} .input-error-box .input-error")


def test_attention_layer_and_head_errors_show_next_to_their_boxes(page):
    open_tab(page, "Attention")
    sync_api.expect(page.locator("#at-heads svg.hv")).to_be_visible()
    head = page.locator("#at-head input")
    head.fill("head 9")
    head.press("Enter")
    sync_api.expect(page.locator("#at-view-error")).to_contain_text("Head must be between 1 and")
    sync_api.expect(input_messages(page, "attention")).to_have_count(1)  # not under the text box too
    head.click()  # the page is shared by the tests: the head back to the average, and the message goes
    page.get_by_role("option", name="average of heads", exact=True).click()
    sync_api.expect(input_messages(page, "attention")).to_have_count(0)


# sets window.answered once an event's progress on the block `selector` has shown and gone (its answer is in)
WATCH_ANSWER_JS = """selector => { window.answered = false;
  const block = document.querySelector(selector);
  let pending = false;
  new MutationObserver((_, observer) => {
    const hidden = block.querySelector('[data-testid=status-tracker]').classList.contains('hide');
    pending ||= !hidden;
    if (pending && hidden) { window.answered = true; observer.disconnect(); }
  }).observe(block, {attributes: true, childList: true, subtree: true}); }"""


def test_a_new_text_clears_a_message_about_the_last_ones_token(page):
    """A typed token's message stayed after a new text was drawn (only a token event cleared it), and greyed the
    new text's views as stale: the text run clears it when it succeeds. The head view, which does not read the
    token, is drawn with a wrong one typed: its event said the Token message again, under the Text box, and when it
    ran after the new text's run (under load) that message outlived the new text."""
    open_tab(page, "Attention")
    page.get_by_role("tab", name="Where one token attends").click()
    token = page.locator("#at-token input")
    message = enter_wrong(page, token, "zzz", "#at-token-error", "Token must be")
    page.evaluate(WATCH_ANSWER_JS, "#at-heads")
    page.get_by_role("tab", name="Head view").click()  # as the other tests expect it
    page.wait_for_function("() => window.answered")  # the head view's own event has answered
    sync_api.expect(page.locator("#at-heads svg.hv")).to_be_visible()
    sync_api.expect(message).to_have_count(1)  # still there, greying the views...
    sync_api.expect(input_messages(page, "attention")).to_have_count(1)  # ... and said once, by the token
    text = page.locator("#at-text textarea")
    text.fill("The cat sat on the mat.")
    text.press("Enter")
    sync_api.expect(page.locator("#at-notes")).to_contain_text("13 tokens")  # the tiny tokenizer's pieces
    sync_api.expect(input_messages(page, "attention")).to_have_count(0)
    sync_api.expect(page.locator("#sr-live")).to_contain_text("13 tokens")  # said, before the next test listens


def test_attention_model_box(app, browser):
    """The attention tab's model box: the shipped classifier instead of the fill-mask model reruns the tab;
    a choice that cannot be used is named next to the box, stays in the box and the tab keeps its model. The status
    line takes no room until it has something to say. (A page of its own: it checks the tab's first state, which
    the tests before it on the shared page may have changed, and the refusal it leaves would be the shared page's.)"""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    open_tab(page, "Attention")
    page.get_by_role("tab", name="Head view").click()
    status = page.locator("#at-model-status")
    sync_api.expect(status).to_be_hidden()
    box = page.locator("#at-model input")
    box.click()
    page.get_by_role("option", name="ours: this server's classifier").click()
    sync_api.expect(status).to_contain_text("parameters")
    sync_api.expect(status).to_be_visible()
    sync_api.expect(page.locator("#at-notes")).to_contain_text("sentiment (fine-tuned on SST-2)")
    sync_api.expect(page.locator("#at-heads svg.hv")).to_be_visible()
    box.fill("/etc")
    box.press("Enter")
    sync_api.expect(page.locator("#at-model-status")).to_contain_text("local folders can be chosen only")
    sync_api.expect(page.locator("#at-model-status")).to_contain_text(
        "This tab still runs ours: this server's classifier.")
    sync_api.expect(box).to_have_value("/etc")  # kept as typed, to be corrected rather than typed again
    sync_api.expect(page.locator("#at-notes")).to_contain_text("sentiment (fine-tuned on SST-2)")
    shot(page, "3-attention-model")
    box.click()
    page.get_by_role("option", name="ours: this server's fill-mask model").click()
    sync_api.expect(page.locator("#at-notes")).to_contain_text("fill-mask (pretrained MLM)")
    # a suggested Hub model picked from the list, offline: said next to the box, which shows the tab's model again
    box.click()
    page.get_by_role("option", name="FacebookAI/roberta-base").click()
    sync_api.expect(page.locator("#at-model-status")).to_contain_text("cannot be reached from this server")
    sync_api.expect(box).to_have_value("ours: this server's fill-mask model")
    sync_api.expect(page.locator("#at-notes")).to_contain_text("fill-mask (pretrained MLM)")
    page.close()


EPOCH_COLUMN_JS = """(table, font) => {
  table.style.fontFamily = font;
  const th = [...table.querySelectorAll('tbody th')].at(-1), style = getComputedStyle(th);
  const range = document.createRange();
  range.selectNodeContents(th);
  const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
  const unit = document.createElement('span');  // 1 ch in the label's font
  unit.style.cssText = 'display:inline-block;width:1ch';
  const label = th.textContent, text = range.getBoundingClientRect().width;
  th.appendChild(unit);
  const ch = unit.getBoundingClientRect().width;
  unit.remove();
  const result = {label, lines: tops.size, overflow: th.scrollWidth - th.clientWidth, ch,
                  spare: th.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - text};
  table.style.fontFamily = '';
  return result;
}"""


def test_masking_example(page):
    open_tab(page, "Masking")
    table = page.locator("#mk-table .mk-scroll")  # its tables: the first epochs', and the others' in a disclosure
    # another text first, so that the example's click is seen to redraw the table (the page opens on that
    # example, and a test run before this one may have left any text there)
    page.locator("#mk-text textarea").fill("A short sentence about something else entirely.")
    page.locator("#mk-text textarea").press("Enter")
    sync_api.expect(table).to_contain_text("entirely")
    page.get_by_text("The quick brown fox jumps over the lazy dog near the river b", exact=False).first.click()
    sync_api.expect(table).to_contain_text("fox")
    sync_api.expect(table).not_to_contain_text("entirely")
    sync_api.expect(table.locator("tbody tr")).to_have_count(12)
    sync_api.expect(table.locator("thead").first).to_contain_text("RoBERTa dynamic")
    assert table.locator("td i").count() > 3 * 12  # every token of every epoch of every scheme
    assert table.locator("i.mk-1").count() > 0  # some <mask>s
    target = table.locator("i.mk-1").first
    target.hover()  # a tap on a phone: the original token shows beside the mask
    content, title = target.evaluate("e => [getComputedStyle(e, '::after').content, e.title]")  # one element's
    assert content.strip('"') == title != ""
    # the keyboard: one tab stop, the table's box, and then every original shows in line
    box = page.locator("#mk-table .mk-scroll")
    page.locator("#mk-text textarea").focus()
    for _ in range(12):  # past the slider, the seed, the button and the examples
        page.keyboard.press("Tab")
        if box.evaluate("e => e === document.activeElement"):
            break
    assert box.evaluate("e => e.matches(':focus-visible')")
    ring = box.evaluate("e => [getComputedStyle(e).outlineStyle, getComputedStyle(e).outlineWidth]")
    assert ring == ["solid", "2px"], ring  # a ring a keyboard user sees
    # what a screen reader says of the target is there, but out of sight: a clipped box of 1 px at most
    said = target.locator(".sr").evaluate("e => { const r = e.getBoundingClientRect(); "
                                          "return [e.textContent, r.width, r.height]; }")
    assert said[0] and said[1] <= 1 and said[2] <= 1, said
    inline = target.evaluate("e => getComputedStyle(e, '::after').position")
    assert inline == "static" and target.get_attribute("title") in target.evaluate(
        "e => getComputedStyle(e, '::after').content")
    # the epochs after the first few, in a closed disclosure: the next Tab stop, opened by Enter, and while it has
    # the focus every original shows in line there too
    later = box.locator("details.mk-later")
    sync_api.expect(later.locator("tbody tr").first).to_be_hidden()
    page.keyboard.press("Tab")
    sync_api.expect(later.locator("summary")).to_be_focused()
    sync_api.expect(later.locator("summary")).to_have_text(re.compile(r"Epochs \d+–12: BERT's 10 masks start again"))
    page.keyboard.press("Enter")
    sync_api.expect(later.locator("tbody tr").last).to_be_visible()
    late = later.locator("i[title]").last
    assert late.get_attribute("title") in late.evaluate("e => getComputedStyle(e, '::after').content")
    page.keyboard.press("Enter")  # closed again: the page is shared
    sync_api.expect(later.locator("tbody tr").first).to_be_hidden()
    sync_api.expect(page.locator("#mk-plot img")).to_be_visible()
    assert page.locator("#mk-plot img").get_attribute("alt").startswith("“Coverage")
    check_heading_levels(page)
    shot(page, "4-masking")
    # another seed, typed: the table is redrawn (no button, no Enter needed; it was redrawn only on Enter, and a
    # seed typed then left by Tab showed beside the old seed's table)
    before = table.inner_html()
    page.locator("#mk-seed input").fill("3")
    page.wait_for_function("before => document.querySelector('#mk-table table').innerHTML !== before", arg=before)
    # ... and by its arrow keys
    before = table.inner_html()
    page.locator("#mk-seed input").press("ArrowUp")
    sync_api.expect(page.locator("#mk-seed input")).to_have_value("4")
    page.wait_for_function("before => document.querySelector('#mk-table table').innerHTML !== before", arg=before)
    # the slider moved by keys reruns it, as a mouse does (the epochs now 14)
    page.get_by_label("range slider for Epochs").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    sync_api.expect(table.locator("tbody tr")).to_have_count(14)
    # a number typed past the slider's range is read as the slider clamps it, with no error about another value
    page.get_by_label("number input for Epochs").fill("999")
    sync_api.expect(table.locator("tbody tr")).to_have_count(MAX_EPOCHS)
    # "epoch 40", the widest label, on one line inside its column (set in ch, so that it follows the font), in
    # the page's font and in bold DejaVu Sans (a fallback, the widest measured: 8.06 ch); the column wastes at
    # most a character or so. (It was 5.5em: "epoch 10" to "epoch 12" ran into the next column.)
    for font in ("", "DejaVu Sans"):
        fit = table.evaluate(EPOCH_COLUMN_JS, font)
        assert fit["label"] == f"epoch {MAX_EPOCHS}" and fit["lines"] == 1 and fit["overflow"] <= 0, (font, fit)
        assert fit["spare"] <= 1.5 * fit["ch"], (font, fit)
    page.get_by_label("number input for Epochs").blur()
    sync_api.expect(page.get_by_label("number input for Epochs")).to_have_value(str(MAX_EPOCHS))
    sync_api.expect(page.locator(".input-error-box:visible")).to_have_count(0)


def test_tokens_tab(page):
    """An example's tokens as chips, one per token with its id; the word picker offers the text's words and
    another word redraws merge by merge; a word too long for it is refused next to the picker."""
    open_tab(page, "Tokens")
    page.get_by_text("Ths sentnce has sevral speling misteaks.", exact=True).click()
    chips = page.locator("#tk-view .bpe-chip")
    sync_api.expect(page.locator("#tk-view .bpe-summary")).to_contain_text("6 words")
    assert chips.count() >= 8 and chips.first.locator(".bpe-id").inner_text().isdigit()
    picker = page.locator("#tk-word input")
    first = picker.input_value()
    assert first.startswith("␣") or first.isalpha()
    # the live region looks for news 400 ms after the page settles, and a result seen for the first time is not
    # news: a person's next click comes later than the test's would. The example's merges announced: it has looked.
    sync_api.expect(page.locator("#sr-live")).to_contain_text(f"Merge by merge: How “{spoken(first)}” is cut")
    picker.click()
    page.get_by_role("option", name="␣has", exact=True).click()
    sync_api.expect(page.locator("#tk-merges .bpe-summary")).to_contain_text("How “␣has” is cut")
    # announced with its outcome, not only the question its title asks; "␣" said as the chips say it
    sync_api.expect(page.locator("#sr-live")).to_contain_text(re.compile(
        r"Merge by merge: How “space \+ has” is cut into tokens: .*(one token|\d+ tokens): space \+ h"))
    steps = page.locator("#tk-merges table.bpe-table tr")
    assert steps.count() >= 2  # the header and the bytes at least
    shot(page, "6-tokens")
    picker.fill("x" * 50)
    picker.press("Enter")
    sync_api.expect(page.locator("#tk-merges-box .input-error")).to_contain_text("up to 40 bytes")
    assert page.locator("#tk-input-col .input-error:visible").count() == 0  # the text's own box stays clear
    sync_api.expect(page.locator("#tk-merges")).to_have_css("filter", "grayscale(1)")  # the last word's, dimmed
    picker.click()  # a word that can be replayed clears the message (the page is shared with the next tests)
    page.get_by_role("option", name="␣has", exact=True).click()
    sync_api.expect(page.locator("#tk-merges-box .input-error")).to_have_count(0)
    # a screen reader: the tokens are a named list, each said as "space + s, id 266", not "open box s 266";
    tokens = page.locator("#tk-view ol.bpe-chips")
    assert tokens.get_attribute("aria-label") == f"{chips.count()} tokens"
    said = tokens.locator("li .bpe-sr").all_inner_texts() or tokens.locator("li .bpe-sr").all_text_contents()
    assert said[0] == "<s>, special token, id 0" and "space + s, id 266" in said, said


def spoken(text):
    """A token's label as the live region says it: "␣" (a leading space) as the Tokens tab's chips say it."""
    return re.sub("␣(?=\\S)", "space + ", text).replace("␣", "space")


HOVER_AT_CENTRE_JS = """el => { el.scrollIntoView({block: 'center'});  // what a mouse over the chip's middle shows
  const r = el.getBoundingClientRect();
  return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2).closest('[title]')?.title; }"""


def test_a_screen_reader_hears_tokens_and_merges_as_said_not_in_the_byte_alphabet(page):
    """The reviewer's case: each chip's hover (its vocabulary entry, "Ã¨me", "Ġbr") was on the <li>, where
    Chromium made it the item's accessible name, said before every token; and merge by merge's "merge applied"
    cells were read raw, "␣ + t → ␣t · rank #1" ("open box", "right arrow"). Each item is now said as its spoken
    text, the hover still shows under the mouse, and a merge is said with "space"."""
    text = "crème brûlée 🍮"
    only_bytes = set(to_byte_level(" " + text)) - set(text)  # "Ã", "¨", "Ġ", "ð", ...: the alphabet's own
    open_tab(page, "Tokens")
    box = page.locator("#tk-text textarea")
    box.fill(text)
    box.press("Enter")
    sync_api.expect(page.locator("#tk-view .bpe-summary")).to_contain_text("3 words")
    chips = page.locator("#tk-view ol.bpe-chips")
    items = re.findall(r"^\s*- listitem(.*)$", chips.aria_snapshot(), re.M)
    said = chips.locator("li .bpe-sr").all_text_contents()
    assert items == [f": {s}" for s in said], items  # no name of its own: what is said is the spoken text
    assert "space + b, id " in " ".join(said) and "⟨byte 0xF0⟩, of “🍮”, id " in " ".join(said), said
    names = [name for role, name in accessibility_tree(page) if role == "listitem"]
    assert not [name for name in names if only_bytes & set(name)], names
    # a mouse still gets the hover (its vocabulary entry, in the byte-level alphabet)
    assert chips.locator("li").nth(1).evaluate(HOVER_AT_CENTRE_JS).startswith("vocabulary entry ")
    picker = page.locator("#tk-word input")
    picker.fill("␣the")
    picker.press("Enter")
    sync_api.expect(page.locator("#tk-merges .bpe-summary")).to_contain_text("How “␣the” is cut")
    cells = re.findall(r'^\s*- cell "(.*)"', page.locator("#tk-merges table.bpe-table").aria_snapshot(), re.M)
    merges = [cell for cell in cells if " merge into " in cell]
    assert merges and any(cell.startswith("space and ") for cell in merges), cells
    assert not [cell for cell in cells if {"␣", "→", "#"} & set(cell) or only_bytes & set(cell)], cells
    steps = page.locator("#tk-merges ol.bpe-chips li")
    assert steps.last.evaluate(HOVER_AT_CENTRE_JS).startswith("vocabulary entry ")


def test_embeddings_tab(page):
    """Each view answers its own inputs, and a typo is refused next to them, leaving the other views alone."""
    open_tab(page, "Embeddings")
    word = page.locator("#em-word textarea")
    word.fill("house")
    word.press("Enter")
    sync_api.expect(page.locator("#em-neighbours")).to_contain_text("Nearest to “house”")
    rows = page.locator("#em-neighbours table.ev-table tr")
    sync_api.expect(rows).to_have_count(1 + 10)  # the header and the 10 neighbours
    # a screen reader hears the first neighbours and how many, not the heading alone, and hears it again when the
    # checkbox or Neighbours changes the list under the same heading
    said = re.compile(r"Nearest words: Nearest to “house” \((\d+) words\): \S+ 0\.\d{3}, \S+ 0\.\d{3}, \S+ 0\.\d{3}, …")
    sync_api.expect(page.locator("#sr-live")).to_have_text(said)
    record_announcements(page)
    words_only = page.get_by_label("Only tokens that begin a word (a space, then a letter or digit)")
    words_only.press("Space")
    page.wait_for_function("() => window.announced.some(t => t.startsWith("
                           "'Nearest words: Nearest to “house” (10 words)'))")
    words_only.press("Space")  # back: the page is shared
    sync_api.expect(words_only).to_be_checked()
    page.evaluate("window.announced = []")
    page.get_by_label("range slider for Neighbours").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => window.announced.some(t => t.includes('(11 words)'))")
    page.keyboard.press("ArrowLeft")
    sync_api.expect(rows).to_have_count(1 + 10)
    c = page.locator("#em-c textarea")
    c.fill("")
    c.press("Enter")
    sync_api.expect(page.locator("#em-an-col .input-error")).to_contain_text("Word c")
    assert page.locator("#em-nb-col .input-error:visible").count() == 0
    sync_api.expect(page.locator("#em-neighbours")).to_have_css("opacity", "1")
    c.fill("woman")
    c.press("Enter")
    sync_api.expect(page.locator("#em-an-col .input-error")).to_have_count(0)
    sync_api.expect(page.locator("#em-map img")).to_be_visible()
    # a screen reader hears each figure's title (Gradio's own alt text reads "undefined plot ...")
    assert page.locator("#em-map img").get_attribute("alt").startswith("“Words on a map")
    assert page.locator("#em-positions img").get_attribute("alt").startswith("“Learned positions")
    check_heading_levels(page)
    shot(page, "7-embeddings")


def test_about_tab(page):
    open_tab(page, "About")
    sync_api.expect(page.get_by_text("17.7M")).to_be_visible()
    sync_api.expect(page.locator(".about-card").first).to_contain_text("parameters")
    text = page.get_by_role("tabpanel").inner_text()
    assert "../" not in text and "/tmp/" not in text and "/work/" not in text  # no machine paths
    broken = page.evaluate("() => [...document.querySelectorAll('[role=tabpanel] img')]"
                           ".filter(i => i.complete && i.naturalWidth === 0).length")
    assert broken == 0
    # what the model read: the counts' figure (TOKEN_COUNTS's, beside the counts file) with its caption
    sync_api.expect(page.get_by_text("What it read")).to_be_visible()
    sync_api.expect(page.get_by_role(
        "img", name=re.compile("How often the pretraining text holds each token"))).to_be_visible()
    page.get_by_text("Architecture and parameter counts").click()
    sync_api.expect(page.get_by_role("cell", name="Token embeddings", exact=True)).to_be_visible()
    check_number_columns(page, "#tab-about")
    # a static figure is read by its alt text but is no Tab stop (gr.Image wraps it in a button that does
    # nothing); its own fullscreen button is one
    figures = page.locator(".static-figure button:has(img)")
    sync_api.expect(figures.first).to_have_attribute("tabindex", "-1")
    assert all(b.get_attribute("tabindex") == "-1" for b in figures.all())
    # ... and heard once, as an image in a figure: the button around it was heard first, named by the same alt
    sync_api.expect(figures.first).to_have_attribute("role", "figure")
    check_figures_read_once(page, "#tab-about")
    assert page.locator(".static-figure button[aria-label=Fullscreen]").first.get_attribute("tabindex") != "-1"
    check_heading_levels(page)
    shot(page, "5-about")


def accessibility_tree(page):
    """(role, name) of every node of the page's accessibility tree as Chromium builds it for a screen reader (the
    ignored ones left out: a hidden tab's)."""
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    return [(n["role"]["value"], n.get("name", {}).get("value", "")) for n in nodes if not n.get("ignored")]


def check_figures_read_once(page, tab):
    """Each static figure of `tab` (gr.Image) is one image named by its alt text, and nothing else has that name
    (gr.Image's button around it was a button of the same name: the alt read twice)."""
    alts = page.locator(f"{tab} .static-figure img").evaluate_all("els => els.map(e => e.alt)")
    assert alts, tab
    roles = accessibility_tree(page)
    for alt in alts:
        assert [role for role, name in roles if name == alt] == ["image"], alt


def test_script_is_shown_as_text(page):
    payload = "<script>alert(1)</script> <img src=x onerror=alert(2)>"
    open_tab(page, "Sentiment")
    box = page.locator("#st-text textarea")
    box.fill(payload + " good")
    page.get_by_role("button", name="Classify").click()
    words = page.locator("#st-words")
    sync_api.expect(words).to_contain_text("<script>alert(1)</script>")
    assert words.locator("script, img").count() == 0
    # a web address in the text: plain text in the explanation, not a link with stray backslashes in it
    url_text = "Visit www.example.com/reviews and https://example.com/x_y_z or a@b.com today, it was good"
    box.fill(url_text)
    page.get_by_role("button", name="Classify").click()
    explain = page.locator("#st-explain")
    sync_api.expect(explain).to_contain_text("https://example.com/x_y_z")
    assert "\\" not in explain.inner_text() and explain.locator("a[href*='example']").count() == 0
    open_tab(page, "Masking")
    page.locator("#mk-text textarea").fill(payload)
    page.get_by_role("button", name="Mask", exact=True).click()
    table = page.locator("#mk-table table.mk-table").first  # the first epochs' (the later ones are in a <details>)
    sync_api.expect(table).to_contain_text("script")
    assert page.locator("#mk-table script, #mk-table img").count() == 0
    # a dialog would come from the payload's image failing to load: an image of our own, inserted after the answer,
    # fails after any the answer inserted (and a dialog holds the page until the test dismisses it)
    page.evaluate("() => { const img = new Image(); img.onerror = () => { window.imageFailed = true; }; "
                  "img.src = 'x?after-the-answer'; }")
    page.wait_for_function("() => window.imageFailed")
    assert page.dialogs == []
    shot(page, "6-script-as-text")


def test_enter_submits_and_errors_show_next_to_the_input_keeping_the_results(page):
    open_tab(page, "Fill mask")
    box = page.locator("#fm-text textarea")
    box.fill("Paris is the capital of <mask>.")
    box.press("Enter")  # Enter submits
    sync_api.expect(page.locator("#fm-filled")).to_contain_text("Paris is the capital of")
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
    shown = page.locator("#fm-view .fm-view").inner_text()  # not a progress timer
    box.fill("no mask in this one")
    box.press("Enter")
    error = page.locator("#tab-fill .input-error")  # another tab's message may still be there, out of sight
    sync_api.expect(error).to_contain_text("There is no mask in the text: write <mask>")
    shot(page, "7-error")
    # the previous results stay, no red "Error" badges
    sync_api.expect(page.locator("#fm-filled")).to_contain_text("Paris is the capital of")
    assert page.locator("#fm-view .fm-view").inner_text() == shown
    sync_api.expect(page.locator("#fm-view, #fm-filled").get_by_text("Error", exact=True)).to_have_count(0)
    assert "Traceback" not in page.content()
    # ... dimmed, as the last text's, until the next answer
    opacity = "el => getComputedStyle(el).opacity"
    assert float(page.locator("#fm-view").evaluate(opacity)) < 1
    assert page.locator("#fm-view").evaluate("el => getComputedStyle(el).filter") == "grayscale(1)"
    box.fill("The cat sees")
    box.press("Shift+Enter")  # a new line, not a submit
    box.type("the <mask>.")
    assert box.input_value() == "The cat sees\nthe <mask>."
    page.get_by_role("button", name="Predict").click()
    sync_api.expect(page.locator("#fm-filled")).to_contain_text("The cat sees")  # the new answer, not the last one
    sync_api.expect(error).to_be_hidden()
    assert float(page.locator("#fm-view").evaluate(opacity)) == 1


# an element past the viewport's sides is fine inside a box that scrolls and fits; a box that clips it (overflow:
# hidden, as .gradio-container's) cuts it off where nothing can scroll to it (at 768 px the fill-mask table was
# cut so), unless that box is visually hidden text for a screen reader
OVERFLOW_JS = """() => {
  const width = document.documentElement.clientWidth;
  const overflow = el => getComputedStyle(el).overflowX;
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || (r.right <= width + 1 && r.left >= -1)) continue;
    if (getComputedStyle(el).visibility === 'hidden') continue;
    let p = el.parentElement, inside = false;
    for (; p && p !== document.body; p = p.parentElement) {
      if (overflow(p) === 'visible') continue;
      const q = p.getBoundingClientRect();
      if (['auto', 'scroll'].includes(overflow(p))) {
        if (q.right <= width + 1 && q.left >= -1) { inside = true; break; }
        continue;
      }
      if (q.width <= 1 || q.height <= 1) { inside = true; break; }  // visually hidden, for a screen reader
      if (r.right > q.right + 1 || r.left < q.left - 1) break;  // cut off
    }
    const name = `${el.tagName.toLowerCase()}#${el.id}.${String(el.className).slice(0, 60)}`;
    if (!inside) out.push(`${name} ${Math.round(r.left)}..${Math.round(r.right)}`);
  }
  return {width, scrollWidth: document.documentElement.scrollWidth, overflowing: out.slice(0, 15)};
}"""
LINES_JS = """els => els.map(e => {  // how many lines an element's text takes, in font sizes (one line: ~1.2)
  const range = document.createRange();
  range.selectNodeContents(e);
  const rects = [...range.getClientRects()].filter(r => r.width > 0);
  return (Math.max(...rects.map(r => r.bottom)) - Math.min(...rects.map(r => r.top))) /
    parseFloat(getComputedStyle(e).fontSize);
})"""
EXAMPLES_JS = """() => [...document.querySelectorAll('.table-wrap > table[role="grid"]')].filter(t => t.offsetParent)
  .map(t => ({box: t.parentElement.clientWidth, table: t.scrollWidth,
              cut: [...t.querySelectorAll('th')].filter(th => th.scrollWidth > th.clientWidth + 1)
                .map(th => th.textContent)}))"""
MD_TABLES_JS = """() => [...document.querySelectorAll('.md table')].filter(t => t.offsetParent).map(t => {
  const style = getComputedStyle(t);
  return {head: t.querySelector('th').textContent.trim(), width: t.clientWidth, content: t.scrollWidth,
          cue: style.backgroundImage.includes('radial-gradient') && style.backgroundAttachment.includes('local'),
          cut: [...t.querySelectorAll('th')].filter(th => th.scrollWidth > th.clientWidth + 1)
            .map(th => th.textContent)};
})"""


def check_examples_fit(page, name):
    """A tab's Examples table fits its box at the phone's width, every header whole (the Fill mask tab's was 491 px
    in 369, "Predictions per mask (top-k)" cut to "Predictions pe", with only an unseen sideways scroll)."""
    tables = page.evaluate(EXAMPLES_JS)
    assert tables, name
    for table in tables:
        assert table["table"] <= table["box"] + 1 and not table["cut"], (name, table)


def edge_shades(locator):
    """(left, right): the mean grey level of a 5-pixel strip just inside each side of an element, as painted."""
    from PIL import Image
    with Image.open(io.BytesIO(locator.screenshot())) as image:
        grey = image.convert("L")
        w, h = grey.size

        def mean(x0):
            pixels = [grey.getpixel((x, y)) for x in range(x0, x0 + 5) for y in range(h // 4, 3 * h // 4)]
            return sum(pixels) / len(pixels)
        return mean(3), mean(w - 8)


def eventually(measure, holds, timeout=TIMEOUT_MS / 1000):
    """`measure()` again until `holds` it or `timeout` seconds have passed (a painted result, which
    wait_for_function cannot read); its last value."""
    deadline = time.monotonic() + timeout
    value = measure()
    while not holds(value) and time.monotonic() < deadline:
        time.sleep(0.1)
        value = measure()
    return value


NUMBER_CELLS_JS = """scope => [...document.querySelectorAll(`${scope} .md table :is(th, td)[align="right"]`)]
  .filter(c => c.offsetParent).map(c => [c.textContent.trim().slice(0, 20), getComputedStyle(c).textAlign])"""


def check_number_columns(page, scope):
    """A Markdown table's number columns (`|---:|`, which the renderer writes as align="right") are right-aligned, so
    that their digits line up: Gradio's `.prose td {text-align: left}` overrode the attribute."""
    cells = page.evaluate(NUMBER_CELLS_JS, scope)
    assert cells and all(align == "right" for _, align in cells), cells


def check_markdown_tables(page, name):
    """At the phone's width a Markdown table fits (its headers wrap between words), or, too wide to (the masking
    ablation's seven columns), scrolls in its box showing that it does: a shadow on the side that has more, gone
    once that side is reached. No header is cut."""
    tables = page.evaluate(MD_TABLES_JS)
    assert tables, name
    for table in tables:
        assert not table["cut"] and table["cue"], (name, table)
    fits = [(table["head"], table["content"] <= table["width"] + 1) for table in tables]
    if name == "Masking":  # the statistics and the paper's table fit; the predictions and the ablation scroll
        assert fits == [("scheme", True), ("scheme", False), ("arm", False), ("masking (paper)", True)], tables
        ablation = page.locator(".md table:visible", has=page.locator("th:text-is('arm')"))
        ablation.scroll_into_view_if_needed()
        left, right = edge_shades(ablation)
        assert right < left - 10, (left, right)  # the right side, which has more, is shaded
        ablation.evaluate("t => { t.scrollLeft = t.scrollWidth; }")
        page.wait_for_function("t => t.scrollLeft + t.clientWidth >= t.scrollWidth - 1", arg=ablation.element_handle())
        left, right = eventually(lambda: edge_shades(ablation), lambda shades: shades[0] < shades[1] - 10)
        assert left < right - 10, (left, right)  # scrolled to its end: the left side now
    else:
        assert all(fit for _, fit in fits), tables


PHONE_TABS = ["Fill mask", "Sentiment", "Attention", "Tokens", "Embeddings", "Masking", "About"]


def test_phone_viewport_nothing_overflows_and_every_tab_fits(app, browser):
    """390x844: the seven short tab names fit (no "..." menu), and on every tab, after its default example,
    no element sticks out of the viewport horizontally (wide tables scroll inside their own box)."""
    page = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
    for name in PHONE_TABS:
        tab = page.get_by_role("tab", name=name)
        sync_api.expect(tab).to_be_visible()
        box = tab.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, (name, box)
    for i, name in enumerate(PHONE_TABS):
        open_tab(page, name)
        if name == "Masking":
            sync_api.expect(page.locator("#mk-table table.mk-table tbody tr")).to_have_count(12)
            sync_api.expect(page.locator("#mk-plot img")).to_be_visible()
            # every epoch a card a screen tall made the tab 12 screens long (10,461 px with the shipped models): the
            # first epochs show, the others wait in a closed disclosure
            sync_api.expect(page.locator("#mk-table details.mk-later tbody tr").first).to_be_hidden()
            shown = page.locator("#mk-table tbody tr:visible").count()
            tall = page.evaluate("document.querySelector('#mk-table').getBoundingClientRect().height")
            assert shown == 3 and tall < 3 * 844, (shown, tall)
            page.locator("#mk-plot-text summary").click()  # the coverage as text fits too
            sync_api.expect(page.locator("#mk-plot-text tbody tr")).to_have_count(12)
        if name == "Attention":
            sync_api.expect(page.locator("#at-heads svg.hv")).to_be_visible()
            # the head view fits its box whole (no sideways scroll), its text at its own size (it was shrunk to 83%)
            box = page.locator("#at-heads .hv-box")
            assert box.evaluate("e => e.scrollWidth <= e.clientWidth"), box.evaluate("e => e.scrollWidth")
            assert box.locator(".hv-k text").first.evaluate("e => e.getBoundingClientRect().height") >= \
                0.9 * head_view.FONT
            row = page.locator("#at-heads .hv-r").nth(1)
            row.locator(".hv-q").tap()  # a tap focuses the token: its lines and values show
            sync_api.expect(row.locator(".hv-v")).to_be_visible()
            page.get_by_role("tab", name="All heads of the layer").click()  # the heads' table scrolls in its box
            sync_api.expect(page.locator("#at-grid-text table").first).to_be_visible()
            page.locator("#at-grid-text").get_by_text("Every layer at a glance").click()
            sync_api.expect(page.locator("#at-grid-text table").nth(1)).to_be_visible()
            # each table's caption wraps at its box's width and stays in view as the table scrolls (it was one
            # line as wide as the table, cut at the phone's edge)
            captions = page.locator("#at-grid-text .hr-scroll caption")
            assert captions.count() == 2
            page.locator("#at-grid-text .hr-scroll").first.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
            cut = captions.evaluate_all("els => els.filter(e => { const r = e.getBoundingClientRect(), "
                                        "box = e.closest('.hr-scroll').getBoundingClientRect(); "
                                        "return r.left < box.left - 1 || r.right > box.right + 1; })"
                                        ".map(e => e.textContent)")
            assert not cut, cut
        if name == "Fill mask":
            # a prediction named by a long label ("⟨byte 0xE8⟩ (part of a character)", the tiny model's) wraps:
            # shown whole, not cut to "…" as a long word is
            labels = page.locator("#fm-view .fm-label")
            assert labels.count() > 0 and labels.evaluate_all("els => els.every(e => e.scrollWidth <= e.clientWidth)")
            # a long word's chips (wider than the phone together) wrap inside the view
            text = page.locator("#fm-text textarea")
            text.fill("<mask> https://example.com/averylongpathwithoutanyspacesatall")
            text.press("Enter")
            sync_api.expect(page.locator("#fm-filled")).to_contain_text("averylongpath")
            sticking_out = page.locator("#fm-view .fm-tok").evaluate_all(
                "els => els.filter(e => e.getBoundingClientRect().right > "
                "e.closest('.fm-strip').getBoundingClientRect().right + 1).length")
            assert sticking_out == 0, sticking_out
            # the layer-by-layer table fits the phone's width (scrolling in its own box), its bars stay, and each
            # number and guess keeps to one line
            page.locator("#fm-layers-box").get_by_text("Layer by layer").click()
            sync_api.expect(page.locator("#fm-layers .ll-mask")).to_have_count(1)
            sync_api.expect(page.locator("#fm-layers td.ll-track").first).to_be_visible()
            lines = page.locator("#fm-layers td.ll-score, #fm-layers .ll-guess").evaluate_all(LINES_JS)
            assert lines and max(lines) < 1.8, lines
        if name in ("Fill mask", "Attention", "Masking"):  # the examples' table fits: headers wrap between words
            check_examples_fit(page, name)
        if name in ("Masking", "About"):  # Markdown tables fit, or scroll showing that they do
            check_markdown_tables(page, name)
        if name == "Tokens":  # the chips and merge by merge wrap at the phone's width
            sync_api.expect(page.locator("#tk-merges table.bpe-table")).to_be_visible()
        if name == "Embeddings":
            sync_api.expect(page.locator("#em-positions img")).to_be_visible()
        if name == "Sentiment":  # the counterfactual's table scrolls inside its box
            page.get_by_role("button", name="What if? (counterfactual)").click()
            sync_api.expect(page.locator("#st-whatif table")).to_be_visible()
        page.screenshot(path=str(SCREENSHOTS / f"phone-{i + 1}-{name.lower().replace(' ', '-')}.png"),
                        full_page=True)
        check_nothing_overflows(page, name)
    # the masking schemes stack: one under the other, not three squeezed columns
    open_tab(page, "Masking")
    cells = page.locator("#mk-table tbody tr").first.locator("td")
    boxes = [cells.nth(k).bounding_box() for k in range(3)]
    assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"] and min(b["width"] for b in boxes) > 250
    # ... each under its scheme's name, as the table's header (hidden there) says it
    names = [cells.nth(k).evaluate("e => getComputedStyle(e, '::before').content") for k in range(3)]
    assert "RoBERTa dynamic" in names[2] and len(set(names)) == 3 and "none" not in names, names
    # a tap opens the later epochs, in the page's own scroll: no box inside it catches the swipes
    page.locator("#mk-table details.mk-later summary").tap()
    sync_api.expect(page.locator("#mk-table tbody tr").last).to_be_visible()
    assert page.locator("#mk-table tbody tr:visible").count() == 12
    box = page.locator("#mk-table .mk-scroll").evaluate("e => [e.scrollHeight, e.clientHeight]")
    assert box[0] <= box[1] + 1, box
    page.close()


def check_nothing_overflows(page, name):
    """Once the layout has settled, nothing sticks out of the viewport or is cut off at its edge."""
    try:  # as long as any other wait here (a loaded machine settles late), then the assertion says what sticks out
        page.wait_for_function(f"() => {{ const r = ({OVERFLOW_JS})(); "
                               "return r.scrollWidth <= r.width && !r.overflowing.length; }", timeout=TIMEOUT_MS)
    except sync_api.TimeoutError:
        pass
    result = page.evaluate(OVERFLOW_JS)
    assert result["scrollWidth"] <= result["width"] and not result["overflowing"], (name, result)


# a touch screen's targets (WCAG 2.5.5: 44 px): Gradio's tab buttons were 32 px high, accordion headers and <details>
# summaries 20, the Examples chips 30
TOUCH_TARGETS = {"tab": ".tab-container button", "accordion": "button.label-wrap", "summary": "details > summary",
                 "example": "button.gallery-item"}
HEIGHTS_JS = """sel => [...document.querySelectorAll(sel)].filter(e => e.offsetParent !== null)
  .map(e => [e.textContent.trim().slice(0, 30), e.getBoundingClientRect().height])"""
# each word of the text node that holds `words` (its first): [the word, the lines it is drawn on]
WORD_LINES_JS = """words => { const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node; while ((node = walker.nextNode()) && !node.textContent.includes(words));
  return node ? [...node.textContent.matchAll(/\\S+/g)].map(m => { const range = document.createRange();
    range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
    return [m[0], new Set([...range.getClientRects()].filter(r => r.width).map(r => Math.round(r.top))).size]; })
    : null; }"""


def test_a_touch_phone_has_targets_a_finger_can_tap(app, browser):
    """A 360 px touch phone: the tab and sub-tab buttons, the accordions' headers, the <details> summaries and the
    Examples chips are 44 px high; the head view's rows, the tokens a learner is told to tap, are 24 px high at least
    (they were 18), and the view fits its box (it scrolled 14 px sideways in the 316 px box). On the Sentiment tab,
    the note after a long text's coloured words wraps between words (Gradio breaks a HighlightedText anywhere: it
    read "not colour" and "ed)" on the next line)."""
    page = browser.new_page(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
    low, seen = [], set()
    for name in PHONE_TABS:
        open_tab(page, name)
        if name == "Attention":
            box = page.locator("#at-heads .hv-box")
            sync_api.expect(box.locator("svg.hv")).to_be_visible()
            assert box.evaluate("e => e.scrollWidth <= e.clientWidth"), box.evaluate("e => e.scrollWidth")
            rows = box.locator(".hv-hit").evaluate_all("els => els.map(e => e.getBoundingClientRect().height)")
            assert len(rows) > 5 and min(rows) >= 24, rows
        if name == "Sentiment":
            page.locator("#tab-sentiment button.gallery-item", has_text="A long review").click()
            sync_api.expect(page.locator("#st-words")).to_contain_text("the rest was read for the score")
            words = page.evaluate(WORD_LINES_JS, "the rest was read for the score")
            assert max(lines for _, lines in words) == 1, words  # no word broken across two lines
        for kind, selector in TOUCH_TARGETS.items():
            for text, height in page.evaluate(HEIGHTS_JS, f"#tab-{name.split()[0].lower()} {selector}, "
                                              f".tabs:has(#tab-fill) > .tab-wrapper {selector}"):
                seen.add(kind)
                if height < 43.5:
                    low.append((name, kind, text, round(height, 1)))
    assert seen == set(TOUCH_TARGETS) and not low, (seen, low)
    page.close()


def test_a_phone_reads_a_figure_at_its_natural_size_in_fullscreen(app, browser):
    """About's figures are drawn 1,000 px wide or more: in a 360 px phone's column their small print was 3 px high,
    and Gradio's fullscreen view fitted them to the screen, no larger. It shows a figure at its natural size, in a
    box that scrolls both ways, its exit button in the screen's corner however far it scrolls; and the fullscreen
    button sits above the figure, a finger's size, not on it (it hid a legend's first lines)."""
    page = browser.new_page(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    open_tab(page, "About")
    first = page.locator("#tab-about .static-figure", has=page.locator("button[aria-label=Fullscreen]")).first
    alt = first.locator("img").get_attribute("alt")  # the figure by its image (its button is renamed in fullscreen)
    figure = page.locator("#tab-about .static-figure", has=page.get_by_alt_text(alt, exact=True))
    image, button = figure.locator("img"), figure.get_by_role("button", name="Fullscreen")
    image.scroll_into_view_if_needed()
    page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=image.element_handle())
    natural = image.evaluate("i => [i.naturalWidth, i.naturalHeight]")
    shown, at = image.bounding_box(), button.bounding_box()
    assert natural[0] > 360 and shown["width"] < natural[0], (natural, shown)
    assert at["y"] + at["height"] <= shown["y"] + 1, (at, shown)  # above the figure
    assert min(at["width"], at["height"]) >= 43.5, at
    button.tap()
    sync_api.expect(figure).to_contain_class("fullscreen")
    page.wait_for_function("([i, w]) => Math.abs(i.getBoundingClientRect().width - w) <= 1",
                           arg=[image.element_handle(), natural[0]])
    assert figure.evaluate("f => f.scrollWidth > f.clientWidth")  # it scrolls sideways to show the rest
    figure.evaluate("f => { f.scrollLeft = f.scrollWidth; f.scrollTop = f.scrollHeight; }")
    leave = figure.get_by_role("button", name="Exit fullscreen mode")
    corner = leave.bounding_box()
    assert corner["x"] >= 0 and corner["x"] + corner["width"] <= 360 and 0 <= corner["y"] <= 740 - corner["height"]
    leave.tap()
    sync_api.expect(figure).not_to_contain_class("fullscreen")
    page.close()


TABLES_FIT_JS = """() => [...document.querySelectorAll('table.fm-table, table.ev-table')]
  .filter(t => t.offsetParent && t.getBoundingClientRect().width).map(t => {
    const column = t.closest('.column').getBoundingClientRect(), r = t.getBoundingClientRect();
    const track = t.querySelector('td.fm-track, td.ev-track');  // where the bars are drawn
    return {view: t.closest('[id]').id, past: Math.round(r.right - column.right),
            track: track ? Math.round(track.getBoundingClientRect().width) : null};
  })"""
CUT_LABEL_JS = """e => { const block = e.closest('.block').getBoundingClientRect(), r = e.getBoundingClientRect();
  return r.right <= block.right + 1 && r.left >= block.left - 1; }"""


def test_tablets_and_small_laptops_show_every_table_whole(app, browser):
    """At 768-1180 px the page puts two columns side by side, each 340-560 px wide: the fill-mask and embeddings
    tables kept their wide layout (it followed the screen's width), stuck out of their column, were cut off at the
    screen's edge, and their bars shrank to 2 px. The narrow layout follows the view's own width: nothing is cut
    off, each table fits its column, and its bars have room (60 px at least; it was 30). The Masking tab's Epochs
    slider shows its "40" whole (it was cut to "4(")."""
    for width, height in ((768, 1024), (1024, 768)):
        page = browser.new_page(viewport={"width": width, "height": height})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(app.url)
        sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
        for name in PHONE_TABS:
            open_tab(page, name)
            if name == "Embeddings":
                sync_api.expect(page.locator("#em-analogy table.ev-table")).to_be_visible()
            if name == "Masking":
                sync_api.expect(page.locator("#mk-table table.mk-table tbody tr")).to_have_count(12)
                end = page.locator("#tab-masking .max_value").first
                assert end.evaluate(CUT_LABEL_JS), (width, end.bounding_box())
            if name in ("Fill mask", "Embeddings"):
                tables = page.evaluate(TABLES_FIT_JS)
                assert tables and all(t["past"] <= 1 and (t["track"] or 60) >= 60 for t in tables), (width, tables)
            check_nothing_overflows(page, f"{name} at {width} px")
        page.close()


CONTRAST_JS = """sel => {
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  const lum = c => { const [r, g, b] = rgb(c).slice(0, 3).map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const el = document.querySelector(sel);
  let bg = el, color = getComputedStyle(el).color;
  while (bg && rgb(getComputedStyle(bg).backgroundColor)[3] === 0) bg = bg.parentElement;
  const back = bg ? getComputedStyle(bg).backgroundColor : 'rgb(255, 255, 255)';
  const [a, b] = [lum(color), lum(back)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def contrast(a, b):
    """WCAG's contrast ratio of two sRGB colours (0-255)."""
    def lum(c):
        r, g, b = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in (x / 255 for x in c[:3])]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b
    high, low = sorted([lum(a), lum(b)], reverse=True)
    return (high + 0.05) / (low + 0.05)


def rendered_contrast(locator):
    """(background, contrast) of an element as painted, CSS filters included (getComputedStyle does not apply
    them): its screenshot's most common pixel, and its contrast with the pixel that stands out most (the text)."""
    from PIL import Image
    with Image.open(io.BytesIO(locator.screenshot())) as image:
        colours = image.convert("RGB").getcolors(image.width * image.height)
    back = max(colours)[1]
    return back, max(contrast(back, c) for _, c in colours)


# each side's words have one filter, a hue-rotate, and the legend's swatches none: they are painted in the colours
# they name (a redrawn word's filter changes over Gradio's 0.15 s transition: waited for)
SAME_FILTERS_JS = """() => ['239, 68, 60', '128, 90, 213'].every(rgb => {
  const words = [...document.querySelectorAll(`#st-words .score-token[style*="${rgb}"]`)]
    .map(e => getComputedStyle(e).filter);
  return words.every(f => f === words[0] && f.startsWith('hue-rotate'));
}) && [...document.querySelectorAll('#st-explain .st-swatch')]
  .every(e => !getComputedStyle(e).filter.includes('hue'))"""


def check_word_colours(page):
    """The Sentiment tab's words: Gradio paints plus red and minus purple, demo/page.css filters them to green and
    pink; the legend's swatches are green and pink as painted, with no hue filter (their Markdown names their own
    colours), and the strongest word (full strength) is green or pink as painted, its text at 4.5:1."""
    strongest = page.locator('#st-words .score-token[style*="rgb("]').first  # alpha 1 reads rgb(...), not rgba
    sync_api.expect(strongest).to_be_visible()
    sync_api.expect(page.locator("#st-explain .st-swatch")).to_have_count(2)
    page.wait_for_function(SAME_FILTERS_JS)
    swatches = page.locator("#st-explain .st-swatch")
    for k, name in enumerate(["green", "pink"]):
        swatch = swatches.nth(k)
        sync_api.expect(swatch).to_have_text(name)
        back, ratio = rendered_contrast(swatch)
        r, g, b = back
        assert (g > r + 50 and g > b + 50) if name == "green" else (r > g + 50 and b > g + 50), (name, back)
        assert ratio >= 4.5, (name, back, ratio)
    back, ratio = rendered_contrast(strongest)
    r, g, b = back
    if "239, 68, 60" in strongest.get_attribute("style"):
        assert g > r + 50 and g > b + 50, back  # green
    else:
        assert r > g + 50 and b > g + 50, back  # pink
    assert ratio >= 4.5, (back, ratio)


def test_dark_theme_keeps_the_custom_views_readable(app, browser):
    """With the system's dark theme (Gradio follows it), the custom HTML views keep their text readable (WCAG AA,
    4.5:1): the masking table's headers and coloured tokens, the layer-by-layer answer chip, and the Sentiment
    tab's strongest word."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url + "?__theme=dark")
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
    assert page.evaluate("document.body.classList.contains('dark') || "
                         "!!document.querySelector('.dark')")
    page.locator("#fm-layers-box").get_by_text("Layer by layer").click()
    sync_api.expect(page.locator("#fm-layers .ll-answer").first).to_be_visible()
    assert page.evaluate(CONTRAST_JS, "#fm-layers .ll-answer") >= 4.5
    open_tab(page, "Masking")
    sync_api.expect(page.locator("#mk-table table.mk-table tbody tr")).to_have_count(12)
    for selector in ("#mk-table thead th", "#mk-table tbody th", "#mk-table i.mk-1", ".mk-legend .mk-2",
                     ".mk-legend .mk-3"):
        assert page.evaluate(CONTRAST_JS, selector) >= 4.5, selector
    open_tab(page, "Sentiment")  # its default example, computed on load
    check_word_colours(page)
    page.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_markdown_table_has_one_frame_and_dark_mode_draws_its_lines_grey(app, browser, theme):
    """A Markdown table (made a scrolling block for a phone) took Gradio's table padding inside its own border: a
    second frame 10 px around the cells, in both themes; in dark mode every line was the text's near-white
    (#f3f4f6). One frame, the cells' own; dark lines in the page's border grey."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url + ("?__theme=dark" if theme == "dark" else ""))
    open_tab(page, "About")
    table = page.locator("#tab-about .md table").first
    sync_api.expect(table).to_be_visible()
    style = table.evaluate("t => { const s = getComputedStyle(t), c = getComputedStyle(t.querySelector('td'));"
                           " return [s.paddingTop, s.borderTopWidth, c.borderTopWidth, c.borderTopColor]; }")
    assert style[:3] == ["0px", "0px", "1px"], style
    channels = [int(v) for v in re.findall(r"\d+", style[3])[:3]]
    if theme == "dark":
        assert max(channels) < 128, style  # a grey, not near-white
    page.close()


# CONTRAST_JS for another colour property of the element (a line's stroke)
CONTRAST_OF_JS = CONTRAST_JS.replace("sel => {", "([sel, property]) => {").replace(
    "getComputedStyle(el).color", "getComputedStyle(el)[property]")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_selected_tab_the_raw_json_and_the_head_views_lines_are_readable(app, browser, theme):
    """The selected tab's name was the theme's accent, 4.47:1 on white and 4.29:1 on the dark page, and the raw
    JSON's ":" and "," 2.1:1: both reach 4.5:1. In dark mode the head view's lines kept their light-mode blue and
    red (3.7:1 and 4.0:1 at full opacity): its lines, idle and of a focused token, reach 4.5:1 at full opacity
    (WCAG asks 3:1 of a figure's lines), and so does its values' text."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url + ("?__theme=dark" if theme == "dark" else ""))
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
    assert page.evaluate(CONTRAST_JS, ".tab-container button.selected") >= 4.5
    page.get_by_text("Raw pipeline output").click()
    sync_api.expect(page.locator(".json-node .punctuation").first).to_be_visible()
    assert page.evaluate(CONTRAST_JS, ".json-node .punctuation") >= 4.5
    open_tab(page, "Attention")
    page.get_by_role("tab", name="Head view").click()
    assert page.evaluate(CONTRAST_JS, "#at-views .tab-container button.selected") >= 4.5  # a sub-tab's too
    sync_api.expect(page.locator("#at-heads svg.hv")).to_be_visible()
    assert page.evaluate(CONTRAST_OF_JS, ["#at-heads .hv line", "stroke"]) >= 4.5
    page.mouse.move(0, 0)  # a row under the mouse shows its own lines, whatever has the focus
    page.locator("#at-heads .hv-r").first.focus()
    sync_api.expect(page.locator("#at-heads .hv-r").first.locator(".hv-v")).to_be_visible()
    assert page.evaluate(CONTRAST_OF_JS, ["#at-heads .hv-r:focus line", "stroke"]) >= 4.5
    assert page.evaluate(CONTRAST_OF_JS, ["#at-heads .hv-r:focus .hv-v text", "fill"]) >= 4.5
    page.close()


def test_a_dropdown_keeps_the_focus_after_a_choice(page):
    """Gradio 6.31 blurs a dropdown once it has taken a choice (Enter on an option, a typed model and Enter): the focus
    fell to the page's <body>, and the next Tab started from the page's top. A box that took a choice from the
    keyboard keeps it, its list closed and its event sent; Down opens the list at the option chosen (it opened at the
    first: Down after layer 5 chose layer 1), and Tab goes on to the next box with only that one's list open."""
    open_tab(page, "Attention")
    figure = page.locator("#at-views svg.hv:visible")
    layer, lists = page.locator("#at-layer input"), page.locator("#tab-attention ul[role=listbox]:visible")
    last = int(layer.input_value())  # the page opens on the last layer
    sync_api.expect(figure).to_have_attribute("aria-label", re.compile(rf"^Layer {last},"))
    layer.focus()
    for key, chosen in (("ArrowUp", last - 1), ("ArrowDown", last)):
        page.keyboard.press(key)
        sync_api.expect(lists).to_have_count(1)
        page.keyboard.press("Enter")
        sync_api.expect(layer).to_have_value(str(chosen))
        sync_api.expect(layer).to_be_focused()
        sync_api.expect(lists).to_have_count(0)
        sync_api.expect(figure).to_have_attribute("aria-label", re.compile(rf"^Layer {chosen},"))
    page.keyboard.press("Tab")
    sync_api.expect(page.locator("#at-head input")).to_be_focused()
    sync_api.expect(lists).to_have_count(1)
    assert lists.evaluate("l => !!l.closest('#at-head')")
    page.keyboard.press("Escape")
    # a clicked (tapped) option leaves the box as Gradio does: a phone would keep its keyboard up for a focused box
    layer.click()
    page.locator("#at-layer").get_by_role("option", name=str(last - 1), exact=True).click()
    sync_api.expect(layer).to_have_value(str(last - 1))
    sync_api.expect(layer).not_to_be_focused()
    sync_api.expect(figure).to_have_attribute("aria-label", re.compile(rf"^Layer {last - 1},"))
    layer.focus()  # as the page opened, for the next tests
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    sync_api.expect(figure).to_have_attribute("aria-label", re.compile(rf"^Layer {last},"))
    model = page.locator("#at-model input")
    shipped = model.input_value()
    model.fill("no-such/model-here")
    model.press("Enter")
    sync_api.expect(page.locator("#at-model-status")).to_contain_text("no-such/model-here")
    sync_api.expect(model).to_be_focused()
    model.press("Control+a")  # typed on, the focus still there: back to the shipped model, as the page opened
    model.press_sequentially(shipped)
    model.press("Enter")
    sync_api.expect(page.locator("#at-model-status")).not_to_contain_text("no-such/model-here")
    sync_api.expect(model).to_be_focused()


def test_a_dropdowns_list_closes_when_the_tab_key_leaves_it(page):
    """Gradio 6.31's dropdowns open their list on focus and left it open when Tab moved on: with the keyboard,
    Layer's, Head's and the model's lists piled up over the controls after them, the focused button included. Only
    the focused box's list is open."""
    open_tab(page, "Attention")
    sync_api.expect(page.locator("#at-heads svg.hv")).to_be_visible()
    lists = page.locator("#tab-attention ul[role=listbox]:visible")
    page.locator("#at-layer input").focus()
    for box in ("#at-head", "#at-model"):
        page.keyboard.press("Tab")
        sync_api.expect(page.locator(f"{box} input")).to_be_focused()
        sync_api.expect(lists).to_have_count(1)
        assert lists.evaluate("(l, box) => !!l.closest(box)", box), box
    page.keyboard.press("Escape")
    sync_api.expect(lists).to_have_count(0)


def test_enter_brings_a_sliders_typed_number_into_its_range(page):
    """Gradio's slider brings a typed number into its range only when its box loses the focus: after 50 and Enter,
    Fill mask's top-k box said 50 where the slider, and what Predict sent, said 20. Enter does it there and then,
    the focus staying in the box; a number within the range is left as typed."""
    open_tab(page, "Fill mask")
    box = page.get_by_label("number input for Predictions per mask (top-k)")
    slider = box.locator("xpath=ancestor::*[contains(@class,'block')][1]").locator("input[type=range]")
    for typed, shown in (("50", "20"), ("0", "1"), ("7", "7"), ("5", "5")):
        box.fill(typed)
        box.press("Enter")
        sync_api.expect(box).to_have_value(shown)
        sync_api.expect(slider).to_have_value(shown)
        sync_api.expect(box).to_be_focused()


def test_a_warning_goes_when_the_next_run_starts(page):
    """A popup warning is about the run that said it: Gradio kept it 10 s, beside the next run's results (a short
    text's, under "The text is longer than the 128 tokens..."), and listed it twice when a second run said it
    again meanwhile. The popups shown before the visitor's next run close as it starts; one it says again shows once."""
    open_tab(page, "Masking")
    text, button = page.locator("#mk-text textarea"), page.locator("#tab-masking button.primary")
    said = re.compile(r"The text is longer than the \d+ tokens the model reads")
    warnings = page.locator(".toast-body .toast-message-item:visible").filter(has_text=said)
    for start in ("", "Again. "):  # another text each time (a run of the same inputs is skipped), where it is read
        text.fill(start + "The quick brown fox jumps over the lazy dog. " * 30)
        button.click()
        if start:  # the second run answered (its warning comes before its answer)
            sync_api.expect(page.locator("#mk-table")).to_contain_text("Again")
        sync_api.expect(warnings).to_have_count(1)
    shown = time.monotonic()  # the second run's warning showed (Gradio's 10 s began before this)
    text.fill("The quick brown fox jumps over the lazy dog near the river bank.")  # the page's own example again
    button.click()
    sync_api.expect(page.locator("#mk-table")).not_to_contain_text("Again")
    sync_api.expect(warnings).to_have_count(0)
    assert time.monotonic() - shown < 8, "the warning stayed until Gradio's own 10 s were up"
    text.fill("Once more. " + "The quick brown fox jumps over the lazy dog. " * 30)  # the close button still closes
    button.click()
    sync_api.expect(warnings).to_have_count(1)
    page.locator("[data-testid=toast-close]").click()
    sync_api.expect(warnings).to_have_count(0)
    text.fill("The quick brown fox jumps over the lazy dog near the river bank.")  # as the page opened, for the next
    button.click()
    sync_api.expect(page.locator("#mk-table")).not_to_contain_text("Once more")


def test_tab_leaves_a_dropdown_whose_list_scrolls_for_the_next_control(page):
    """Tab out of a dropdown whose open list scrolls (Tokens' "Word of the text" on a long text, Attention's Token
    box) left the focus on the page's <body>: Chromium made the scrolling list a Tab stop, and Gradio closed it as its
    box lost the focus. A list is no Tab stop: Tab goes on to the next control."""
    open_tab(page, "Tokens")
    text = page.locator("#tk-text textarea")
    text.fill(" ".join("abcdefghijklmnopqrstuvwxyz"))  # 26 words of a token or two: the tiny model reads them all
    text.press("Enter")
    sync_api.expect(page.locator("#tk-word input")).to_have_value(re.compile(r"^␣?[a-z]$"))  # a word of the text
    page.locator("#tk-word input").focus()
    options = page.locator("#tk-word ul[role=listbox]")
    sync_api.expect(options.get_by_role("option").first).to_have_attribute("aria-setsize", "26")
    assert options.evaluate("l => l.scrollHeight > l.clientHeight + 1")  # the list scrolls
    page.keyboard.press("Tab")
    after = page.evaluate("""() => { const e = document.activeElement;
      return [e.tagName, document.querySelector('#tk-word').compareDocumentPosition(e)]; }""")
    assert after[0] != "BODY" and after[1] == 4, after  # a control after the box (following it, not inside it)


def test_the_headers_start_here_links_open_their_tabs(page):
    """The header's "Start here" line names the tabs in the model's order, not the page's: each name is a link that
    opens its tab (and gives its button the focus, as a click on it would)."""
    for name in ("Tokens", "Sentiment", "Fill mask"):
        page.get_by_role("link", name=name, exact=True).click()
        tab = page.get_by_role("tab", name=name, exact=True)
        sync_api.expect(tab).to_have_attribute("aria-selected", "true")
        sync_api.expect(tab).to_be_focused()
    assert page.evaluate("location.hash") == ""  # the page's address is left as it was


def test_the_small_print_of_counts_and_mask_chips_is_12_px(page):
    """The asides of the counts' summaries ("(each document counted once; ...)") and the completed sentence's
    "<mask> 1" chips read 9.6-9.8 px, on a phone too: 12 px, as the text around them."""
    open_tab(page, "Fill mask")
    sync_api.expect(page.locator("#fm-filled .label").first).to_be_visible()
    sizes = page.evaluate("""() => [...document.querySelectorAll(
        '#tab-fill .fm-counts summary small, #fm-filled .label')].map(e => parseFloat(getComputedStyle(e).fontSize))""")
    assert len(sizes) >= 3 and min(sizes) >= 12, sizes


def test_the_completed_sentence_has_no_gap_before_the_text_after_a_fill(page):
    """Gradio's 8 px margin after a highlighted fill read "Paris is the capital of France ." (the text after it
    brings its own space, where it has one)."""
    open_tab(page, "Fill mask")
    fill = page.locator("#fm-filled .token.highlighted").first
    sync_api.expect(fill).to_be_visible()
    after = fill.evaluate("""f => { const next = f.closest('.token-container').nextElementSibling;
        return next.getBoundingClientRect().left - f.getBoundingClientRect().right; }""")
    assert 0 <= after < 2, after


# the spaces that begin a line of an element's text (x within 1 px of the element's content box's left edge)
SPACES_OPENING_A_LINE = """el => {
  const left = el.getBoundingClientRect().left + parseFloat(getComputedStyle(el).paddingLeft);
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), found = [];
  for (let node; (node = walker.nextNode());) for (let i = 0; i < node.data.length; i++) {
    if (node.data[i] !== ' ') continue;
    const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1);
    const rect = range.getClientRects()[0];
    if (rect && rect.width > 0 && Math.abs(rect.left - left) < 1) found.push(node.data.slice(i, i + 20)); }
  return found; }"""


def test_the_completed_sentence_flows_as_one_text(app, browser):
    """Gradio laid the completed sentence out as a row of boxes that wrap: on a phone, the text after a fill that did
    not fit on the fill's line began a line of its own with its space (" to bed early, ..."), and the fill's word
    began its box with its space. It flows as one text, the space before a fill outside its box: no line begins
    with a space, and a fill has no margin (one glued to the word before it read as a word of its own)."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    open_tab(page, "Fill mask")
    box = page.locator("#fm-text textarea")
    box.fill("She went home and made herself a hot cup of <mask> before <mask> to bed early, as she did on Mondays.")
    box.press("Enter")
    filled = page.locator("#fm-filled .textfield")
    sync_api.expect(filled.locator(".token.highlighted")).to_have_count(2)
    assert filled.evaluate("e => e.getBoundingClientRect().height") > 100  # wrapped over several lines
    assert filled.evaluate(SPACES_OPENING_A_LINE) == []
    # a fill glued to the word before it: no gap between them (Gradio's 4 px margin and the padding read "foot ball")
    page.set_viewport_size({"width": 1280, "height": 900})  # the tiny model's fill (a byte's label) on one line
    box.fill("The foot<mask> is round.")
    box.press("Enter")
    sync_api.expect(filled.locator(".token.highlighted")).to_have_count(1)
    sync_api.expect(filled.locator(".token-container").first).to_have_text("The foot")
    gap = filled.locator(".token.highlighted").evaluate("""f => f.getBoundingClientRect().left -
        f.closest('.token-container').previousElementSibling.querySelector('.text').getBoundingClientRect().right""")
    assert 0 <= gap < 2, gap
    # the text's own line breaks, which the model reads, are kept (the sentence was shown on one line): a blank line
    # between the fill and the next paragraph
    box.fill("The cat <mask>\n\nThe end.")
    box.press("Enter")
    sync_api.expect(filled).to_contain_text("The end.")  # the new answer
    fill_bottom = filled.locator(".token.highlighted").evaluate("e => e.getBoundingClientRect().bottom")
    assert filled.locator(".text").last.evaluate("e => e.getBoundingClientRect().top") > fill_bottom + 8
    page.close()


def test_an_opening_bracket_stays_on_the_line_of_the_code_after_it(app, browser):
    """Gradio drew inline code as an inline-flex box, before which a line may break: on a phone the About card's
    "on WikiText-2 (" ended a line and its file name began the next. Here a text of the shipped card's form is put
    into the About tab's Markdown (the tests' tiny models name no data file) after 0 to 39 words, so that in some
    of them the bracket comes at the end of a line."""
    page = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    open_tab(page, "About")
    sync_api.expect(page.locator("#tab-about .md").first).to_be_visible()
    apart = page.locator("#tab-about .md").first.evaluate("""md => {
      const texts = [...Array(40).keys()].map(n => `<p>${'word '.repeat(n)}on WikiText-2 (<code>wikitext-2/` +
        'wiki.valid.tokens</code>) in 128-token rows.</p>');
      md.insertAdjacentHTML('beforeend', `<div id="bracket-check">${texts.join('')}</div>`);
      const apart = [...md.querySelectorAll('#bracket-check code')].filter(code => {
        const before = code.previousSibling, range = document.createRange();
        range.setStart(before, before.data.length - 1);
        range.setEnd(before, before.data.length);
        return Math.abs(range.getClientRects()[0].bottom - code.getClientRects()[0].bottom) > 4;
      }).length;
      md.querySelector('#bracket-check').remove();
      return apart; }""")
    assert apart == 0, apart
    page.close()


def test_a_what_if_answer_stays_when_the_server_is_slow_to_answer_other_requests(app, browser):
    """What if? on an edited text classifies it first, and the new answer makes the last counterfactual stale. A
    request of its own cleared it: on a loaded server that request came back after the new counterfactual, and
    cleared that instead (a CI run's test_sentiment_example waited 30 s for a table that never showed). Here every
    request the page sends outside the queues is held back 2 s: the new table shows, and is still there after."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    open_tab(page, "Sentiment")
    sync_api.expect(page.locator("#st-words")).to_contain_text("gorgeous")
    page.route("**/gradio_api/run/**", lambda route: (time.sleep(2), route.continue_()))
    page.locator("#st-text textarea").fill("A dull, lifeless and painfully slow mess.")
    page.get_by_role("button", name="What if? (counterfactual)").click()
    table = page.locator("#st-whatif table")
    sync_api.expect(table).to_be_visible()
    sync_api.expect(page.locator("#st-whatif")).to_contain_text("lifeless")
    page.wait_for_timeout(3000)  # any request held back has come back
    sync_api.expect(table).to_be_visible()
    page.close()


def test_an_accordions_title_starts_at_the_left(page):
    """Gradio centred an accordion's title: one that wraps on a phone ("What to look for: ...") was centred under
    the one-line ones, which start at the left."""
    open_tab(page, "Attention")
    sync_api.expect(page.locator("#at-primer")).to_be_visible()  # (the tiny test model has no "look for")
    aligns = page.evaluate("""() => [...document.querySelectorAll('button.label-wrap')].filter(b => b.offsetParent)
        .map(b => getComputedStyle(b).textAlign)""")
    assert aligns and set(aligns) == {"left"}, aligns


def test_tab_lists_are_one_tab_stop_that_the_arrow_keys_move(page):
    """Each tab button was its own Tab stop and the arrow keys did nothing, though the buttons say role=tab: a
    keyboard passed every tab right of the open one to reach its panel (up to 6, then 5 more for Attention's views).
    As ARIA's tabs pattern has it, a tab list is one Tab stop, the open tab; Left and Right (round from end to end),
    Home and End move to another tab and open it."""
    main = page.get_by_role("tablist").first
    names = main.get_by_role("tab").all_inner_texts()
    open_tab(page, "Fill mask")
    page.get_by_role("tab", name="Fill mask").focus()
    for key, at in (("ArrowRight", 1), ("ArrowRight", 2), ("ArrowLeft", 1), ("End", -1), ("ArrowRight", 0),
                    ("ArrowLeft", -1), ("Home", 0), ("ArrowRight", 1)):
        page.keyboard.press(key)
        tab = main.get_by_role("tab", name=names[at], exact=True)
        sync_api.expect(tab).to_be_focused()
        sync_api.expect(tab).to_have_attribute("aria-selected", "true")
        sync_api.expect(main.locator('[role=tab][tabindex="0"]')).to_have_text(names[at])  # the one stop
    page.keyboard.press("Tab")  # into the open tab's panel, not on to the next tab
    assert page.evaluate("() => !!document.activeElement.closest('#tab-sentiment')")
    page.keyboard.press("Shift+Tab")  # back to the open tab
    sync_api.expect(main.get_by_role("tab", name="Sentiment", exact=True)).to_be_focused()
    # Attention's views: a tab list of their own, inside the tab
    open_tab(page, "Attention")
    views = page.locator("#at-views [role=tablist]")
    views.get_by_role("tab", name="Head view").click()
    for key, name in (("ArrowRight", "Heatmap"), ("End", "Where one token attends"), ("Home", "Head view")):
        page.keyboard.press(key)
        sync_api.expect(views.get_by_role("tab", name=name)).to_be_focused()
        sync_api.expect(views.locator('[role=tab][tabindex="0"]')).to_have_text(name)
    sync_api.expect(page.locator("#at-heads svg.hv")).to_be_visible()
    sync_api.expect(main.locator('[role=tab][tabindex="0"]')).to_have_text("Attention")


def test_screenshots_script_shoots_every_tab_after_its_example(app, browser, tmp_path):
    """`python -m scripts.screenshots` (the README's pictures): one 1280 x 900 picture per tab, each taken
    once the tab's example is computed (the script waits for it, or fails)."""
    from PIL import Image

    from scripts import screenshots
    paths = screenshots.take(app.url, tmp_path, browser)
    assert [p.name for p in paths] == [f"{name}.png" for _, name, *_ in screenshots.SHOTS] + ["layers.png"]
    for path in paths[:-1]:
        with Image.open(path) as image:
            assert image.size == (1280, 900)
            assert len(image.convert("L").resize((64, 45)).getcolors(256)) > 10  # not a blank page
    with Image.open(paths[-1]) as image:  # the open accordion alone: the page's width, a row per layer
        assert image.size[0] > 1000 and image.size[1] > 200
        assert len(image.convert("L").resize((64, 16)).getcolors(256)) > 10


# ----------------------------------------------------------------------------- accessibility
PAINTED_CONTRAST_JS = """(el, colour) => {  // an element's text (or `colour`) against its background as painted:
  // every ancestor's background, opacity and grayscale filter composited, top down (getComputedStyle applies none
  // of them; CSS filter functions work on sRGB values)
  const rgba = c => { const v = c.match(/[\\d.]+/g).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const over = (top, under) => {  // one colour over another, straight alpha
    const a = top[3] + under[3] * (1 - top[3]);
    return a ? [0, 1, 2].map(i => (top[i] * top[3] + under[i] * under[3] * (1 - top[3])) / a).concat(a) : [0, 0, 0, 0];
  };
  const chain = [];
  for (let e = el; e; e = e.parentElement) chain.unshift(e);
  const paint = (i, text) => {  // what element i paints at a pixel of the text (or beside it), its descendants in
    const style = getComputedStyle(chain[i]);
    let layer = rgba(style.backgroundColor);
    if (i + 1 < chain.length) layer = over(paint(i + 1, text), layer);
    else if (text) layer = over(rgba(colour || style.color), layer);
    if (style.filter.includes('grayscale(1)')) {
      const y = 0.2126 * layer[0] + 0.7152 * layer[1] + 0.0722 * layer[2];
      layer = [y, y, y, layer[3]];
    }
    return [layer[0], layer[1], layer[2], layer[3] * parseFloat(style.opacity)];
  };
  const lum = c => { const [r, g, b] = c.slice(0, 3).map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const canvas = [255, 255, 255, 1];
  const [a, b] = [true, false].map(text => lum(over(paint(0, text), canvas))).sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""
# the Fill mask tab's secondary texts, the ones the dimming of stale results took below 4.5:1 (.fm-note 4.0:1,
# the chips 3.8-4.2:1, the block labels 4.2:1)
STALE_TEXTS = ["#fm-view .fm-note", "#fm-view .fm-mask thead th", "#fm-view .fm-tok.fm-special",
               "#fm-view .fm-tok.fm-masked", "#fm-filled [data-testid=block-label]", "#fm-filled .label"]
STALE_NOTE = "The results shown are still those of the last valid input."
OPACITIES_JS = """el => { const out = []; for (let e = el; e; e = e.parentElement) { const s = getComputedStyle(e);
  if (s.opacity !== '1' || s.filter !== 'none') out.push([e.tagName, e.id, e.className, s.opacity, s.filter]); }
  return out; }"""  # what dims an element, for a failure's message


def check_stale_texts(page):
    """An input error on the Fill mask tab: the last results stay, in grey, every text at 4.5:1 or more."""
    box = page.locator("#fm-text textarea")
    box.fill("no mask in this one")
    box.press("Enter")
    sync_api.expect(page.locator("#tab-fill .input-error")).to_contain_text("There is no mask in the text")
    sync_api.expect(page.locator("#fm-view")).to_have_css("filter", "grayscale(1)")
    try:  # the event's own progress state gone (else the assertion below says what is not readable)
        page.wait_for_function(f"selectors => selectors.every(s => ({PAINTED_CONTRAST_JS})(document.querySelector(s))"
                               " >= 4.5)", arg=STALE_TEXTS, timeout=TIMEOUT_MS)
    except sync_api.TimeoutError:
        pass
    for selector in STALE_TEXTS:
        ratio = page.locator(selector).first.evaluate(PAINTED_CONTRAST_JS)
        assert ratio >= 4.5, (selector, ratio, page.locator(selector).first.evaluate(OPACITIES_JS))


def test_stale_results_stay_readable_and_a_screen_reader_is_told_they_are_stale(page):
    """After an input error the last results were dimmed (opacity .8 and grey), which took the notes, the chips and
    the labels below 4.5:1, and only the grey said that they were the last input's. Every text stays at 4.5:1, and
    the message ends with a note for a screen reader (visually hidden) that says so, where it is true: not beside a
    model box's refusal, which leaves the results as they are."""
    open_tab(page, "Fill mask")
    sync_api.expect(page.locator("#fm-view .fm-mask").first).to_be_visible()
    check_stale_texts(page)
    note = page.locator("#tab-fill .input-error-box .input-error-stale")
    sync_api.expect(note).to_contain_text(STALE_NOTE)
    shown = note.evaluate("e => [getComputedStyle(e).display, e.getBoundingClientRect().width, "
                          "e.getBoundingClientRect().height]")
    assert shown[0] != "none" and shown[1] <= 1 and shown[2] <= 1, shown  # read out, out of sight
    # a model the tab cannot run: its message next to the box, with no such note (the results are the model's)
    model = page.locator("#fm-model input")
    model.fill("/etc")
    model.press("Enter")
    sync_api.expect(page.locator("#fm-model-status")).to_contain_text("local folders can be chosen only")
    sync_api.expect(page.locator("#fm-model-status .input-error-stale")).to_be_hidden()
    model.click()
    page.get_by_role("option", name="ours: this server's fill-mask model").click()
    sync_api.expect(page.locator("#fm-model-status .input-error")).to_have_count(0)
    box = page.locator("#fm-text textarea")  # the page is shared: the text back, the message gone
    box.fill("Paris is the capital of <mask>.")
    box.press("Enter")
    sync_api.expect(page.locator("#tab-fill .input-error")).to_have_count(0)


# the colour painted behind an element (or, with `under`, under it): the first opaque background from its parent
# (or itself) up, the canvas's white if none
BEHIND = """((el, under) => { let back = under ? el : el.parentElement;
  while (back && /rgba\\(.*, 0\\)/.test(getComputedStyle(back).backgroundColor)) back = back.parentElement;
  return back ? getComputedStyle(back).backgroundColor : 'rgb(255, 255, 255)'; })"""


def css_rgb(colour: str) -> list[int]:
    """A CSS colour's red, green and blue (0-255), as getComputedStyle writes it ("rgb(...)" or "rgba(...)")."""
    return [round(float(v)) for v in re.findall(r"[\d.]+", colour)[:3]]


def test_dark_theme_keeps_stale_results_and_hovered_buttons_readable(app, browser):
    """In dark mode too: the stale results' texts at 4.5:1, and the white text of a hovered button (Predict, and
    Compare, a secondary one), whose hover colour was #6366f1 (4.47:1)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url + "?__theme=dark")
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
    page.locator("#fm-compare-box").get_by_text("Compare with another model").click()
    for button in (page.get_by_role("button", name="Predict"), page.locator("#fm-compare-btn")):
        button.hover()
        # hovered, and the theme's transition to the hover's colour ended (it may be the resting colour)
        page.wait_for_function("e => e.matches(':hover') && e.getAnimations().every(a => a.playState !== 'running')",
                               arg=button.element_handle())
        colours = button.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
        fg, bg = [[int(v) for v in re.findall(r"\d+", c)[:3]] for c in colours]
        assert contrast(fg, bg) >= 4.5, colours
    page.mouse.move(0, 0)
    check_stale_texts(page)
    # the message itself: a dark box on the dark page (it was a light-mode pink panel, 17.5:1 against the page),
    # its text at 4.5:1
    error = page.locator("#tab-fill .input-error")
    back, around = (css_rgb(c) for c in error.evaluate(f"e => [getComputedStyle(e).backgroundColor, {BEHIND}(e)]"))
    assert contrast(back, around) < 3, (back, around)
    assert error.evaluate(PAINTED_CONTRAST_JS) >= 4.5
    page.close()


# every visible text of the page with its contrast as painted (PAINTED_CONTRAST_JS), where under 4.5:1; but a text
# that is visually hidden for a screen reader (clipped to nothing), and the Sentiment tab's words, whose colours a
# CSS filter changes (which PAINTED_CONTRAST_JS does not apply; `check_word_colours` reads them from a screenshot)
UNREADABLE_JS = """() => { const painted = """ + PAINTED_CONTRAST_JS + """;
  const skipped = el => { for (let e = el; e; e = e.parentElement) { const s = getComputedStyle(e);
    if (s.clipPath.startsWith('inset(50%') || !['none', 'grayscale(1)'].includes(s.filter)) return true; }
    return false; };
  return [...document.querySelectorAll('body *')].filter(el =>
    [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())
    && el.checkVisibility({visibilityProperty: true, opacityProperty: true})
    && el.getBoundingClientRect().width >= 2 && el.getBoundingClientRect().height >= 2 && !skipped(el))
    .map(el => [el.tagName, el.id, String(el.className), el.textContent.trim().slice(0, 40), painted(el)])
    .concat([...document.querySelectorAll('input[placeholder], textarea[placeholder]')].filter(el =>
      el.placeholder.trim() && !el.value && el.checkVisibility({visibilityProperty: true}) && !skipped(el))
      .map(el => ['::placeholder', el.id, String(el.className), el.placeholder.slice(0, 40),
                  painted(el, getComputedStyle(el, '::placeholder').color)]))
    .filter(row => row[4] < 4.5); }"""
SWEPT_TABS = {  # each tab's panel and a result it shows once its default example is computed
    "Fill mask": ("tab-fill", "#fm-view .fm-mask"), "Sentiment": ("tab-sentiment", "#st-words .score-token"),
    "Attention": ("tab-attention", "#at-heads svg.hv"), "Tokens": ("tab-tokens", "#tk-merges table.bpe-table"),
    "Embeddings": ("tab-embeddings", "#em-analogy table.ev-table"), "Masking": ("tab-masking", "#mk-table table"),
    "About": ("tab-about", ".static-figure img")}


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("tab", SWEPT_TABS)
def test_every_text_is_readable_in_both_themes_and_dark_mode_draws_boxes_dark(themed_page, theme, tab, chromium):
    """In either theme (the page its tests share): every visible text of each tab, its accordions and disclosures open,
    and the page's footer, is at 4.5:1 or more as painted (light mode's footer dots, Gradio's #9ca3af on white, were
    2.5:1), and so is an empty box's placeholder (2.5:1, and 2.1:1 in dark mode). With the dark theme the page asks
    for the browser's dark scrollbars and form controls (`color-scheme`: an inner box that scrolls, the epoch
    table's, had a white one), and its figures, white panels, are dimmed a little, never inverted (that would change
    their colour maps). The sweep opens every accordion and disclosure of the tab: the shared light page, which the
    other tests start from with them closed, is opened anew after it."""
    try:
        _check_every_text_is_readable(themed_page, theme, tab)
    finally:
        if theme == "light":
            chromium.close_page("light")


def _check_every_text_is_readable(page, theme, tab):
    open_tab(page, tab)
    panel_id, result = SWEPT_TABS[tab]
    panel = page.locator(f"#{panel_id}")
    sync_api.expect(panel.locator(result).first).to_be_visible()
    closed = panel.locator("button.label-wrap:not(.open):visible")
    for _ in range(closed.count()):
        closed.first.click()
    panel.evaluate("e => e.querySelectorAll('details').forEach(d => { d.open = true; })")
    try:  # every answer drawn (an opened accordion may compute one; a pending one is dimmed, with Gradio's timer)
        page.wait_for_function(f"() => !document.querySelector('.progress-text') && ({UNREADABLE_JS})().length === 0",
                               timeout=TIMEOUT_MS)
    except sync_api.TimeoutError:
        pass
    assert page.evaluate(UNREADABLE_JS) == []
    if theme == "light":
        return
    assert panel.evaluate("e => getComputedStyle(e).colorScheme") == "dark"
    # the canvas under the page (past its end, an overscroll) takes the body's background: dark, not white
    canvas = [int(v) for v in re.findall(r"\d+", page.evaluate("getComputedStyle(document.body).backgroundColor"))]
    assert max(canvas[:3]) < 64, canvas
    for figure in panel.locator(":is(.matplotlib, .static-figure) img:visible").all():
        dimmed = figure.evaluate("e => getComputedStyle(e).filter")
        assert re.fullmatch(r"brightness\(0\.9\d*\)", dimmed), dimmed


# an element's focus ring: its style, its colour and what is painted around it (under it for a ring drawn inside,
# by a negative outline-offset)
RING_JS = f"""el => {{ const style = getComputedStyle(el);
  return [style.outlineStyle, style.outlineColor, {BEHIND}(el, parseFloat(style.outlineOffset) < 0)]; }}"""
# an element's ::after (the epoch table's tooltip, over the line below): its background, its edge (the background
# where it has no border) and what is painted around the element
TOOLTIP_JS = f"""el => {{ const style = getComputedStyle(el, '::after');
  return [style.backgroundColor, parseFloat(style.borderTopWidth) ? style.borderTopColor : style.backgroundColor,
          {BEHIND}(el)]; }}"""
# the epoch table's lines and the theme's border colour (a probe in the table, coloured by the theme's variable)
TABLE_LINES_JS = """t => { const probe = t.appendChild(document.createElement('i'));
  probe.style.color = 'var(--border-color-primary)';
  const theme = getComputedStyle(probe).color;
  probe.remove();
  return [getComputedStyle(t.querySelector('td')).borderTopColor, getComputedStyle(t.querySelector('tbody th'))
    .borderTopColor, getComputedStyle(t.closest('.mk-scroll')).borderTopColor, theme]; }"""


def check_ring(locator):
    """`locator` (focused) shows a solid ring at 3:1 or more against what is painted around it (WCAG 1.4.11)."""
    style, ring, around = locator.evaluate(RING_JS)
    assert style == "solid" and contrast(css_rgb(ring), css_rgb(around)) >= 3, (style, ring, around)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_masking_tabs_focus_rings_lines_and_tooltip_suit_the_theme(themed_page, theme):
    """The epoch table's box and its later epochs' summary (the tab's Tab stops) had a light-mode ring in dark mode
    too, 2.4:1 and 2.2:1; its lines were a light grey (13:1 on the dark page, a bright grid), and its tooltip's dark
    box vanished on the dark page (1.1:1: bare white text over the next line). In both themes: every ring (these
    two and the text and number boxes') at 3:1 against what is around it, the lines in the theme's border colour,
    and the tooltip's box, or its edge, at 3:1 against the table."""
    page = themed_page
    open_tab(page, "Masking")
    table = page.locator("#mk-table table.mk-table").first
    sync_api.expect(table).to_be_visible()
    cell, epoch, box, theirs = table.evaluate(TABLE_LINES_JS)
    assert cell == epoch == box == theirs, (cell, epoch, box, theirs)
    target = table.locator("i[title]").first
    target.hover()
    back, edge, around = target.evaluate(TOOLTIP_JS)
    assert max(contrast(css_rgb(back), css_rgb(around)), contrast(css_rgb(edge), css_rgb(around))) >= 3, \
        (back, edge, around)
    page.mouse.move(0, 0)
    text, seed = page.locator("#mk-text textarea"), page.locator("#mk-seed input")
    for field in (text, seed):
        field.focus()
        check_ring(field)
    scroll, summary = page.locator("#mk-table .mk-scroll"), page.locator("#mk-table .mk-later > summary")
    for stop in (scroll, summary):  # by the keyboard, as :focus-visible asks
        for _ in range(12):
            if stop.evaluate("e => e === document.activeElement"):
                break
            page.keyboard.press("Tab")
        check_ring(stop)


MIXED_REVIEW = "The visuals are stunning, but the story is a boring mess."
STRENGTH = re.compile(r"rgba?\((?:239, 68, 60|128, 90, 213)(?:, ([\d.]+))?\)")  # a word's |push|: 1 reads rgb(...)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_sentiment_words_colour_stands_out_more_the_bigger_its_push(themed_page, theme):
    """The legend says "the stronger the colour, the bigger the push". In dark mode the words' colours were darkened
    on the dark block: the strongest word 2.7:1 against it (4.2:1 in light mode), and pushes of 0.2 to 0.5 one dark
    green. In both themes each word's colour, as painted, stands out from the block more the bigger its push, the
    strongest at 3:1 or more (WCAG 1.4.11), its text at 4.5:1 (`check_word_colours`)."""
    page = themed_page
    open_tab(page, "Sentiment")
    page.get_by_text(MIXED_REVIEW, exact=True).click()
    sync_api.expect(page.locator("#st-words")).to_contain_text("visuals")
    check_word_colours(page)
    page.wait_for_function("() => [...document.querySelectorAll('#st-words .score-token')]"
                           ".every(e => e.getAnimations().every(a => a.playState !== 'running'))")
    block = painted(page.locator("#st-words .textfield"))
    words = page.locator("#st-words .score-token[style]")
    pushes = []
    for word in words.all():
        strength = STRENGTH.search(word.get_attribute("style")).group(1)
        pushes.append((float(strength or 1), contrast(painted(word), block), word.inner_text()))
    pushes.sort()
    assert pushes[-1][0] == 1 and pushes[-1][1] >= 3, pushes
    # a bigger push (by 0.15 or more: the two colours differ a little at one strength) stands out more
    assert all(weaker[1] < stronger[1] for weaker in pushes for stronger in pushes
               if stronger[0] - weaker[0] >= 0.15), pushes


FIELD_JS = """el => [el.getAttribute('aria-invalid'), (el.getAttribute('aria-describedby') || '').split(' ')
  .filter(Boolean).map(id => document.getElementById(id)?.textContent ?? `no element #${id}`)]"""


def check_tied(field, message):
    """`field` is invalid and described by `message` (a locator), and by nothing else."""
    sync_api.expect(field).to_have_attribute("aria-invalid", "true")
    assert field.evaluate(FIELD_JS) == ["true", [message.text_content()]]


def check_untied(*fields):
    for field in fields:
        assert field.evaluate(FIELD_JS) == [None, []]


def enter_wrong(page, field, value, box, says):
    """`value` entered in `field`: the message in `box` says `says` and is tied to that field; returns it."""
    field.fill(value)
    sync_api.expect(field).to_have_value(value)  # what Enter sends
    field.press("Enter")
    message = page.locator(f"{box} .input-error")
    sync_api.expect(message).to_contain_text(says)
    check_tied(field, message)
    return message


def test_an_error_is_tied_to_its_field_while_it_shows(page):
    """An input error was announced when it showed, but its field never said that it was invalid: a screen reader
    that came back to the field heard nothing. While a message shows, its field (the one the message names, "Word
    c" or "Head", else the one before it) has aria-invalid and aria-describedby pointing at the message; both go
    with the message."""
    open_tab(page, "Sentiment")
    text = page.locator("#st-text textarea")
    message = enter_wrong(page, text, "", "#st-error", "The text is empty")
    text.fill("A gorgeous, funny and deeply moving film.")
    text.press("Enter")
    sync_api.expect(message).to_have_count(0)
    sync_api.expect(text).not_to_have_attribute("aria-invalid", "true")
    check_untied(text)
    # the classification drawn before the next tab's box is typed in: once in CI (a loaded 2-core machine), the
    # analogy's Enter, pressed while it was still pending, sent c's first value ("woman") rather than the empty one
    sync_api.expect(page.locator(".progress-text")).to_have_count(0)
    # the analogy's message names its field: Word c, not a or b
    open_tab(page, "Embeddings")
    a, b, c = (page.locator(f"#em-{name} textarea") for name in "abc")
    message = enter_wrong(page, c, "", "#em-an-col", "Word c")
    check_untied(a, b, page.locator("#em-word textarea"))
    c.fill("woman")
    c.press("Enter")
    sync_api.expect(message).to_have_count(0)
    check_untied(c)
    # ... and the head's, the head's box, not the layer's
    open_tab(page, "Attention")
    head = page.locator("#at-head input")
    message = enter_wrong(page, head, "head 9", "#at-view-error", "Head must be")
    check_untied(page.locator("#at-layer input"), page.locator("#at-text textarea"))
    head.click()
    page.get_by_role("option", name="average of heads", exact=True).click()
    sync_api.expect(message).to_have_count(0)
    check_untied(head)


def test_choosing_a_layer_or_a_head_is_announced(page):
    """Another layer or head redraws the Attention views, but the live region watched only the notes above them,
    which stay: a screen reader heard nothing. It hears the view drawn: "Attention view: Layer 1, head 2"."""
    open_tab(page, "Attention")
    page.get_by_role("tab", name="Head view").click()
    sync_api.expect(page.locator("#at-heads svg.hv")).to_be_visible()
    layer = "2" if page.locator("#at-layer input").input_value() == "1" else "1"  # another one than the shown one
    record_announcements(page)
    page.locator("#at-layer input").click()
    page.get_by_role("option", name=layer, exact=True).click()
    page.wait_for_function("layer => window.announced.some(t => t.startsWith(`Attention view: Layer ${layer}, "
                           "average`))", arg=layer)
    page.locator("#at-head input").click()
    page.get_by_role("option", name="head 2", exact=True).click()
    page.wait_for_function("layer => window.announced.includes(`Attention view: Layer ${layer}, head 2.`)", arg=layer)
    page.locator("#at-head input").click()  # the page is shared: the average back
    page.get_by_role("option", name="average of heads", exact=True).click()
    sync_api.expect(page.locator("#at-heads")).to_contain_text("average")


# every announcement from the page's start: the live region is recorded as soon as page.js adds it
RECORD_FROM_THE_START = """window.announced = [];
new MutationObserver(() => {
  const live = document.querySelector('#sr-live');
  if (live && !live.dataset.recorded) {
    live.dataset.recorded = 'yes';
    new MutationObserver(() => window.announced.push(live.textContent))
      .observe(live, {childList: true, characterData: true, subtree: true});
  }
}).observe(document, {childList: true, subtree: true});"""


def test_announcements_are_short_summaries_and_none_comes_at_load(app, browser):
    """The live region read up to 300 characters of a result's text, table cells and the completed sentence's
    "<mask> 1" chips included, and announced the first tab's own answer once the page had loaded. It says a
    summary written for the ear (the sentence, each mask's top answer; each scheme's targets), and nothing before
    a visitor asks for something."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(RECORD_FROM_THE_START)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
    # the live region looks for news 400 ms after the page is still (it counts its looks, data-looked): it has
    # looked after the answer came, and again after the tabs were switched (page.js, which makes the region, may
    # run after the first answer is drawn: until then there is none, and the wait goes on). The count is read
    # before the switch: read after it, on a loaded machine the look could already have come, and the wait timed out
    page.wait_for_function("() => +document.querySelector('#sr-live')?.dataset.looked > 0")
    looked = page.evaluate("+document.querySelector('#sr-live').dataset.looked")
    open_tab(page, "Sentiment")
    open_tab(page, "Fill mask")
    page.wait_for_function("n => +document.querySelector('#sr-live').dataset.looked > n", arg=looked)
    assert page.evaluate("window.announced") == []
    page.get_by_text("The <mask> sat on the <mask> all day.", exact=True).click()
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(2)
    page.wait_for_function("() => window.announced.length")
    said = page.evaluate("window.announced.at(-1)")
    sentence = " ".join(page.locator("#fm-filled").evaluate(
        "e => [...e.querySelectorAll('.text')].map(t => t.textContent).join('')").split())
    assert said.startswith(f"Completed sentence: {sentence}"), (said, sentence)
    assert "<mask>" not in sentence and re.search(r"\. <mask> 1 \(top 3 of the vocabulary\): .+; "
                                                  r"<mask> 2 \(top 3 of the vocabulary\): ", said), said
    assert "in the pretraining text" not in said and "probability" not in said  # no table read out
    open_tab(page, "Masking")
    sync_api.expect(page.locator("#mk-table table.mk-table tbody tr")).to_have_count(12)
    page.evaluate("window.announced = []")
    text = page.locator("#mk-text textarea")
    text.fill("A much shorter sentence.")
    text.press("Enter")
    page.wait_for_function("() => window.announced.length")
    said = page.evaluate("window.announced.at(-1)")
    assert re.fullmatch(r"Masking, positions ever a target: BERT static, one fixed mask \d+ of \d+; BERT static, 10 "
                        r"masks cycling \d+ of \d+; RoBERTa dynamic \d+ of \d+\.", said), said
    context.close()


def test_a_fill_mask_tables_focus_shows_what_its_hovers_say(page):
    """A score's exact value and ln p, and a chip's count in the pretraining text, were on hover only. The answers'
    table takes the focus (a Tab stop; a tap), and then shows each score's exact value in line; the chips' counts
    are in a closed <details> under them."""
    open_tab(page, "Fill mask")
    table = page.locator("#fm-view table.fm-table").first
    sync_api.expect(table).to_be_visible()
    score = table.locator("td.fm-score").first
    exact = score.locator(".fm-exact")
    width = "e => e.getBoundingClientRect().width"
    assert exact.evaluate(width) <= 1  # out of sight until then
    table.focus()
    sync_api.expect(table).to_be_focused()
    assert exact.evaluate(width) > 20 and exact.inner_text().strip() == f"({score.get_attribute('title')})"
    page.locator("#fm-text textarea").focus()
    assert exact.evaluate(width) <= 1
    table.click()  # a click (a tap) focuses it too
    assert exact.evaluate(width) > 20
    chips = page.locator("#fm-view details.fm-tok-counts")
    sync_api.expect(chips).to_have_count(1)
    sync_api.expect(chips.locator("li").first).to_be_hidden()
    chips.locator("summary").click()
    titled = page.locator("#fm-view .fm-tok:not(.fm-special)[title]").first.get_attribute("title")
    sync_api.expect(chips.locator("li").first).to_have_text(titled)
    chips.locator("summary").click()  # closed again: the page is shared


STATS_FIT_JS = """() => {  // the masking statistics in their box: every header and cell whole, nothing past the box
  const e = document.querySelector('#mk-stats'), table = e.querySelector('table');
  const right = e.getBoundingClientRect().right;
  return {box: e.clientWidth, table: table.scrollWidth,
          cut: [...table.querySelectorAll('th, td')].filter(c => c.scrollWidth > c.clientWidth + 1
            || c.getBoundingClientRect().right > right + 1).map(c => c.textContent)};
}"""
SCROLLING = ".md table, #at-grid .matplotlib, .ll-scroll"
SCROLLERS_JS = f"() => [...document.querySelectorAll('{SCROLLING}')].filter(e => e.offsetParent)" + """
  .map(e => ({tag: e.tagName, scrolls: e.scrollWidth > e.clientWidth + 1, tabindex: e.getAttribute('tabindex'),
              role: e.getAttribute('role'), label: e.getAttribute('aria-label')}))"""
# page.js has marked every box that scrolls, and only those (it measures once a frame, after a resize)
SCROLLERS_SETTLED_JS = f"() => [...document.querySelectorAll('{SCROLLING}')].filter(e => e.offsetParent)" + """
  .every(e => (e.scrollWidth > e.clientWidth + 1) === e.hasAttribute('data-scrolls'))"""


def check_scrollers(page):
    """Each box that scrolls sideways is a Tab stop with a name (a table keeps its role, another box is a region);
    one that fits has none of it. Returns the boxes."""
    boxes = page.evaluate(SCROLLERS_JS)
    for box in boxes:
        if box["scrolls"]:
            role = None if box["tag"] == "TABLE" else "region"
            assert box["tabindex"] == "0" and box["role"] == role and box["label"].endswith("(scrolls sideways)"), box
        else:
            assert box["tabindex"] is None and box["role"] is None and box["label"] is None, box
    return boxes


CELL_LINES_JS = """t => [...t.querySelectorAll('th, td:first-child')].filter(c => c.textContent.trim()).map(c => {
  const range = document.createRange();  // the lines a cell's words take: the distinct tops of their boxes
  range.selectNodeContents(c);
  return [c.textContent.trim(), new Set([...range.getClientRects()].map(r => Math.round(r.top))).size];
})"""


def test_the_masking_tables_keep_each_name_on_one_line_at_1280_px(page):
    """At 1280 px the masking statistics were a 400-px Dataframe whose headers and scheme names ("BERT static, one
    fixed mask") wrapped over 3-4 lines, and the predictions' scheme names over 3. Both are tables as wide as their
    words (demo/masking_view.py's `data_markdown`): the statistics' every header and name on one line, the
    predictions' headers (its cells share the width with the tiny model's long labels, "⟨byte 0x8C⟩ (part of a
    character)"), and the tables fit the page."""
    open_tab(page, "Masking")
    sync_api.expect(page.locator("#mk-preds td").first).to_be_visible()
    for table in ("#mk-stats table", "#mk-preds table"):
        lines = page.locator(table).evaluate(CELL_LINES_JS)
        if table == "#mk-preds table":  # its scheme names share 1280 px with seven columns of the tiny model's labels
            lines = lines[:len(PREDICTION_COLUMNS)]  # its headers
        assert len(lines) >= 7 and all(n == 1 for _, n in lines), (table, [cell for cell in lines if cell[1] > 1])
        assert page.locator(table).evaluate("t => t.scrollWidth <= t.clientWidth + 1"), table


EPOCH_LINES_JS = """() => { const style = s => getComputedStyle(document.querySelector(`#mk-table ${s}`));
  return {box: style('.mk-scroll').borderTopColor, cell: style('td').borderTopColor,
          epoch: style('tbody th').borderTopColor, row: style('tbody tr').borderTopWidth,
          piece: style('td i:not([class])').paddingLeft, target: style('td i[class]').paddingLeft,
          gap: style('table.mk-table').marginBottom}; }"""


def test_the_epoch_tables_lines_are_light_and_its_words_show_no_gaps(app, browser):
    """Gradio's `.prose td` border (the text's colour) beat the epoch table's own light grey: its lines were dark,
    and on a phone, where its rows are blocks, each epoch was a dark box in a dark box. And every word piece was
    padded, so that "ninet" + "een" read as two words. Its lines are its box's light grey, no row has a box on a
    phone, and only the targets (coloured) are padded; no margin parts its first epochs from the later ones' bar."""
    for width in (1280, 360):
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(app.url)
        sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
        open_tab(page, "Masking")
        sync_api.expect(page.locator("#mk-table td i[class]").first).to_be_visible()
        lines = page.evaluate(EPOCH_LINES_JS)
        assert lines["cell"] == lines["epoch"] == lines["box"], (width, lines)
        assert lines["piece"] == "0px" and lines["target"] != "0px", (width, lines)
        # the first epochs' table touches the later epochs' bar (Gradio's table margin left 16 px between them)
        assert lines["gap"] == "0px", (width, lines)
        if width == 360:
            assert lines["row"] == "0px", lines
        page.close()


def test_narrow_phones_fit_the_masking_statistics_and_reach_what_scrolls_by_keyboard(app, browser):
    """At 375 px the masking statistics' last column was cut ("coverag…": 370 px of table in a 354 px box), and more
    at 320 px: they fit both. A box that scrolls sideways (a wide Markdown table, every head of a layer) takes the
    focus, with a name, so that a keyboard can scroll it in Safari too (which, unlike Chromium, does not focus it by
    itself); a box that fits again drops it."""
    page = browser.new_page(viewport={"width": 320, "height": 800}, is_mobile=True, has_touch=True)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app.url)
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
    open_tab(page, "Masking")
    sync_api.expect(page.locator("#mk-stats td").first).to_be_visible()
    for width in (320, 375):
        page.set_viewport_size({"width": width, "height": 800})
        page.wait_for_function(f"() => document.documentElement.clientWidth === {width} && ({SCROLLERS_SETTLED_JS})()")
        fit = page.evaluate(STATS_FIT_JS)
        assert fit["table"] <= fit["box"] + 1 and not fit["cut"], (width, fit)
        # the coverage plot's text version, opened, fits its box too
        coverage = page.locator("#mk-plot-text details")
        if coverage.get_attribute("open") is None:
            coverage.locator("summary").click()
        sizes = coverage.evaluate("d => [d.querySelector('table').getBoundingClientRect().width, d.clientWidth]")
        assert sizes[0] <= sizes[1] + 1, (width, sizes)
        boxes = check_scrollers(page)
        assert any(box["scrolls"] for box in boxes), (width, boxes)  # the ablation's seven columns
    # layer by layer's table scrolls in its box on a phone: a Tab stop, named; on a computer it fits (below)
    open_tab(page, "Fill mask")
    page.locator("#fm-layers-box").get_by_text("Layer by layer").click()
    layers = page.locator("#fm-layers .ll-scroll").first
    sync_api.expect(layers).to_have_attribute("aria-label", "<mask> 1, layer by layer (scrolls sideways)")
    check_scrollers(page)
    open_tab(page, "Masking")
    ablation = page.locator(".md table[data-scrolls]").first
    ablation.focus()
    sync_api.expect(ablation).to_be_focused()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("t => t.scrollLeft > 0", arg=ablation.element_handle())
    open_tab(page, "Attention")
    page.get_by_role("tab", name="All heads of the layer").click()
    sync_api.expect(page.locator("#at-grid img")).to_be_visible()
    grid = page.locator("#at-grid .matplotlib")
    sync_api.expect(grid).to_have_attribute("role", "region")
    sync_api.expect(grid).to_have_attribute("aria-label", "All heads of the layer (scrolls sideways)")
    sync_api.expect(grid).to_have_attribute("tabindex", "0")
    hint = "e => getComputedStyle(e, '::before').content"  # a line over the grid says so to the eye
    assert "Swipe the figure sideways for every head" in page.locator("#at-grid").evaluate(hint)
    check_scrollers(page)
    page.set_viewport_size({"width": 1280, "height": 900})  # it fits: a box like any other again
    sync_api.expect(grid).not_to_have_attribute("role", "region")
    assert page.locator("#at-grid").evaluate(hint) == "none"
    check_scrollers(page)
    open_tab(page, "Fill mask")
    sync_api.expect(layers).not_to_have_attribute("tabindex", "0")
    check_scrollers(page)
    page.close()


def test_each_tabs_results_have_headings_to_jump_between(page):
    """The Attention and Tokens tabs had no heading, and the Masking tab's only one was the ablation's: a screen
    reader's list of headings could not reach their results. Each has h2 headings over its results (the levels
    still in order)."""
    for tab, names in (("Attention", ["Attention views"]), ("Tokens", ["The text as tokens"]),
                       ("Masking", ["What each scheme showed", "Epoch by epoch", "Predictions at the targets"])):
        open_tab(page, tab)
        for name in names:
            sync_api.expect(page.get_by_role("heading", name=name, level=2, exact=True)).to_be_visible()
        check_heading_levels(page)
    # the statistics' table, right under its heading, without showing the heading's words twice
    heading = page.get_by_role("heading", name="What each scheme showed", level=2, exact=True)
    sync_api.expect(page.locator("#mk-stats table")).to_be_visible()
    assert heading.bounding_box()["y"] < page.locator("#mk-stats table").bounding_box()["y"]
    assert page.locator("#mk-stats").get_by_text("What each scheme showed").count() == 0


def test_the_coverage_plot_has_a_text_version(page):
    """The coverage plot's curves were lines only: under it, a closed table of each scheme's coverage after each
    epoch, as every other figure of the page has."""
    open_tab(page, "Masking")
    sync_api.expect(page.locator("#mk-table table.mk-table tbody tr").first).to_be_visible()
    epochs = page.locator("#mk-table table.mk-table tbody tr").count()
    text = page.locator("#mk-plot-text details")
    sync_api.expect(text.locator("summary")).to_have_text("The figure as text")
    sync_api.expect(text.locator("tbody tr").first).to_be_hidden()  # closed
    text.locator("summary").click()
    sync_api.expect(text.locator("tbody tr")).to_have_count(epochs)
    last = text.locator("tbody tr").last.locator("td").all_inner_texts()[:3]  # each scheme's coverage at the end
    stats = page.locator("#mk-stats tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.textContent.trim()))")
    assert last == [row[3] for row in stats], (last, stats)  # both written "21.4%"
    text.locator("summary").click()  # closed again: the page is shared


def test_gradios_arrows_example_tables_and_figures_are_heard_for_what_they_are(page):
    """Every dropdown's arrow reached the accessibility tree as an unnamed image, the Examples tables as unnamed
    grids, and the Masking tab's ablation figure as a button named by its alt text followed by the image. The arrows
    are hidden, each Examples table is named by its label and the inputs it fills, the figure is read once."""
    for tab in ("Fill mask", "Attention", "Masking"):
        open_tab(page, tab)
        panel = page.get_by_role("tabpanel").filter(has=page.locator("table[role=grid]"))
        grid = page.locator(".table-wrap > table[role=grid]:visible")
        sync_api.expect(grid).to_have_count(1)
        columns = grid.locator("thead th").all_inner_texts()
        sync_api.expect(grid).to_have_attribute("aria-label", f"Examples: {', '.join(columns)}")
        arrows = panel.locator("svg.dropdown-arrow")
        assert arrows.count() == 0 or all(a.get_attribute("aria-hidden") == "true" for a in arrows.all()), tab
        assert not unnamed_images(panel.aria_snapshot()), tab
    check_figures_read_once(page, "#tab-masking")


def unnamed_images(snapshot):
    """The images of an aria snapshot that have no name and are not the icon of a button (which names them)."""
    lines, found = snapshot.splitlines(), []
    for k, line in enumerate(lines):
        if line.strip() == "- img":
            indent = len(line) - len(line.lstrip())
            parent = next((p for p in reversed(lines[:k]) if len(p) - len(p.lstrip()) < indent), "")
            if not parent.strip().startswith("- button"):
                found.append((parent.strip(), line.strip()))
    return found


# the line that joins a word's pieces, its chip and the page under it, as painted (their alphas composited)
JOIN_JS = """() => {
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  const over = (top, under) => { const a = top.length > 3 ? top[3] : 1;
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)); };
  const tok = document.querySelector('#fm-view .fm-w .fm-tok + .fm-tok');
  const layers = [];
  for (let e = tok.parentElement; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length < 4 || c[3] > 0) layers.push(c);
    if (c.length < 4 || c[3] === 1) break;
  }
  let page = [255, 255, 255];
  while (layers.length) page = over(layers.pop(), page);
  const style = getComputedStyle(tok), line = rgb(style.borderLeftColor), chip = over(rgb(style.backgroundColor), page);
  return {style: style.borderLeftStyle, page, chip, onChip: over(line, chip), onPage: over(line, page)};
}"""
BAR_TRACKS = {"#fm-view": "td.fm-track", "#fm-layers": "td.ll-track", "#em-neighbours": "td.ev-track"}


def test_word_pieces_are_joined_visibly_and_bars_survive_forced_colours(app, browser):
    """How the model reads it: the dashed line that joins a word's pieces, their only visual tie, was 1.6-1.8:1
    against the chip and the page; it is 3:1 or more in the light and the dark theme. In forced colours (Windows
    High Contrast), which drop backgrounds, the probability and similarity bars vanished under the notes that
    describe them: each is drawn in the text's colour, 3:1 or more against its cell."""
    for theme in ("", "?__theme=dark"):
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(app.url + theme)
        sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
        text = page.locator("#fm-text textarea")
        text.fill("The <mask> sat on the mailmanhouse.")
        text.press("Enter")
        sync_api.expect(page.locator("#fm-view .fm-w .fm-tok + .fm-tok").first).to_be_visible()
        join = page.evaluate(JOIN_JS)
        assert join["style"] == "dashed", join
        assert contrast(join["onChip"], join["chip"]) >= 3, (theme, join)
        assert contrast(join["onPage"], join["page"]) >= 3, (theme, join)
        page.close()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.emulate_media(forced_colors="active")
    page.goto(app.url)
    sync_api.expect(page.locator("#fm-view .fm-mask")).to_have_count(1)
    page.locator("#fm-layers-box").get_by_text("Layer by layer").click()
    for view, track in BAR_TRACKS.items():
        if view == "#em-neighbours":
            open_tab(page, "Embeddings")
        cell = page.locator(f"{view} {track}").first  # the top answer's: its bar fills the cell
        sync_api.expect(cell).to_be_visible()
        bar, back = painted(cell.locator("span")), painted(cell)
        assert contrast(bar, back) >= 3, (view, bar, back)
    page.close()


def painted(locator):
    """The colour an element is painted in most, as a screenshot shows it (forced colours included)."""
    from PIL import Image
    with Image.open(io.BytesIO(locator.screenshot())) as image:
        return max(image.convert("RGB").getcolors(image.width * image.height))[1]


def test_a_crashed_page_or_a_closed_browser_is_opened_anew(chromium, capsys):
    """A crashed renderer (chrome://crash, as CI's "Target crashed") or a closed browser fails one test: the next
    one gets a new page on the app, or a new browser, and the crash's report says what the machine had left."""
    page = chromium.page()
    with page.expect_event("crash"), pytest.raises(sync_api.Error, match="crash"):
        page.goto("chrome://crash")
    assert page.crashed and "page crashed; memory available" in capsys.readouterr().out
    again = chromium.page()
    assert again is not page
    sync_api.expect(again.get_by_role("tab", name="Fill mask")).to_be_visible()
    first = chromium.browser()
    first.close()
    assert chromium.browser() is not first and chromium.browser().is_connected()
    assert "Chromium closed; memory available" in capsys.readouterr().out
    sync_api.expect(chromium.page().get_by_role("tab", name="Fill mask")).to_be_visible()


def test_pages_a_failed_test_leaves_are_closed(chromium):
    """What the `browser` and `page` fixtures' teardowns do after a failed test: the pages it opened itself are
    closed (the shared one is kept), and the shared page it may have left in any state is not the next test's."""
    shared = chromium.page()
    browser = chromium.browser()
    before = set(browser.contexts)
    left = browser.new_page()
    chromium.close_pages_opened_since(before)
    assert left.is_closed() and not shared.is_closed()
    chromium.close_page()
    assert shared.is_closed() and chromium.page() is not shared
