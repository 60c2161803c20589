"""The machinery app.py builds its page with: how an event reaches its handler, alike in every tab.

app.py lays the page out and says which handler (demo/handlers.py) each event calls; this module says how:

- `Wiring.wire`: a UI event (its errors next to its input, the last results kept, a repeat skipped) and the
  public API endpoint of the same handler (`api`), both in the compute queue (`COMPUTE`, APP_CONCURRENCY
  requests at a time), or for a slow handler in the slow one (`SLOW`, as many at a time); `Wiring.examples`: a
  tab's examples, run in their handler's queue too;
- `Wiring.guarded`: the race guards (`demo.repeats`): an event that would only draw again what the page shows,
  a run a later one superseded, a view event sent for a text the page no longer shows (`Wiring.drawn_state`);
- `Wiring.model_box` and `Wiring.load_first`: a tab's model chooser, and a model loaded before the event that
  runs it, both in a loading queue of their own (`LOAD`: a download never holds the compute queue); an API call
  that names a model not loaded yet loads it in the background (`api_endpoint`);
- `Wiring.show_at_start`: a tab's default view (`wire`'s `on_load`), computed once at start-up and laid out as the
  page's own values, so that opening the page queues nothing;
- `Wiring.queue`: the queues themselves, each refusing requests beyond its own `WAITING` (`admission`), so that a
  full queue never refuses another's requests;
- `error_box`, `hint`, `model_note`, `notice`: the small pieces every tab lays out alike.

One `Wiring` per page (gr.Blocks): it holds what the page's guards remember per browser session.
"""
from __future__ import annotations

import functools

import gradio as gr

from demo import model_choice, settings
from demo.formatting import md_escape
from demo.repeats import InFlight, RepeatedEvents
from demo.validation import error_html, held_warnings, keep_results, plain_errors, read_sliders, show_warnings


# requests computed at once in the compute and slow queues below (the loading queue: `LOAD`)
CONCURRENCY = settings.concurrency()
# requests that may wait in each queue below (`admission`)
WAITING = settings.queue_size()
COMPUTE = {"concurrency_id": "compute"}  # every event that runs a model: one queue, CONCURRENCY at a time...
# ... but the slow ones (seconds on a long text: the attention views, up to four matplotlib figures a request;
# What if?, the classifier run on every edit; a comparison with a second model, up to roberta-large's size): a
# queue of their own, as many at a time, so that a client sending them by the dozen holds that queue only, and
# the quick answers (fill mask, sentiment, masking, tokens, embeddings) never wait behind them
SLOW = {"concurrency_id": "slow", "concurrency_limit": CONCURRENCY}
# loading a chosen model (a Hub download): its own queue, as many at a time as the API's loads in the background
LOAD = {"concurrency_id": "load", "concurrency_limit": settings.LOADS_AT_ONCE}
# a step chained after another (What if? after its classification) that finds the text edited meanwhile
EDITED = "The text changed while this ran: press What if? again."
# what the requests in each queue wait for, as the message of a request it refuses says it (`busy`)
QUEUE_NAMES = {"compute": "an answer", "slow": "the slow views (attention, What if?, comparisons)",
               "load": "a model to be loaded"}


def error_box(elem_id=None, fields=()):
    """Where a tab's plain errors show, next to its input (hidden until there is one). `fields`: the inputs (as
    `validation.fail` names them: "Layer", "Head") whose messages show here when another input's event raises
    them (`Wiring.wire`'s `clears`)."""
    box = gr.HTML(visible=False, elem_classes="input-error-box", elem_id=elem_id)
    box.fields = frozenset(fields)
    return box


def hint(text):
    """A tab's one- or two-line "what to try, what to notice"; returned for a tab whose hint follows its model (the
    Sentiment tab's names the classifier's labels, so no "$$" in one is read as LaTeX)."""
    return gr.Markdown(text, elem_classes="hint", latex_delimiters=[])


def model_note(text):
    """The plain note on the model's size, held-out scores and known failures (`model_notes.model_note`), next to
    the result; none when there is no note."""
    if text:
        gr.Markdown(text, elem_classes="model-note")


def notice_markdown(models, keys) -> str:
    """What a tab says on top when a model it runs could not be loaded (`keys`: "mlm", "sentiment"): each
    model's error, escaped; empty when all of them are available."""
    errors = [models[key].error for key in keys if not models[key].available]
    return "\n\n".join(f"⚠️ {md_escape(error)}" for error in errors)


def notice(models, *keys):
    """The `notice_markdown` of a tab that runs the models `keys`, when there is one."""
    text = notice_markdown(models, keys)
    if text:
        gr.Markdown(text, elem_classes="notice")


def components(given) -> list:
    """`given` as a list: Gradio's events take one component or a list of them, and so do `Wiring.wire` and
    `Wiring.examples` (a handler with one output returns one value, not a tuple, either way)."""
    return list(given) if isinstance(given, (list, tuple)) else [given]


def api(fn, inputs, outputs, name, queue=COMPUTE):
    """The public API endpoint `name` on a hidden trigger: `fn` itself (`api_endpoint`), in the shared compute
    queue (`queue`: or the SLOW one); its name and signature do not change with the layout."""
    gr.Button(visible=False).click(api_endpoint(fn), inputs, outputs, api_name=name, **queue)


def api_endpoint(fn):
    """`fn` as the API serves it: its errors raised as plain messages (`plain_errors`), and a model it names that
    is not loaded yet loaded in the background (`model_choice.loading_aside`: "try again in a moment" unless it
    loads within a second), so that a download never holds the compute queue, as the page's model boxes load in
    the LOAD queue."""
    endpoint = plain_errors(fn)

    @functools.wraps(endpoint)
    def call(*args):
        with model_choice.loading_aside():
            return endpoint(*args)

    return call


def busy(concurrency_id) -> str:
    """The message of a request its queue refuses (`admission`)."""
    return (f"The app is busy: {WAITING} requests are already waiting for {QUEUE_NAMES.get(concurrency_id, 'it')}. "
            "Try again in a moment.")


def admission(blocks, fn):
    """The validator of the queued event `fn` of the page `blocks`: it refuses the request (`busy`) when `WAITING`
    requests wait in `fn`'s queue already. Gradio checks a validator as a request joins the queue (after
    preprocessing its inputs), before queueing it; its own `max_size` bounds the sum of every queue, so that a client
    flooding /attention filled it and every other endpoint answered "Queue is full" (and the page loads, when they
    queued events). The message shows by the event's first input that the page shows (a State shows nothing), and
    names that parameter to an API client."""
    shown = next((i for i, c in enumerate(fn.inputs) if not c.stateful), 0)
    count, refused = len(fn.inputs), busy(fn.concurrency_id)

    # async: run in the server's event loop, not in a worker thread (Gradio has preprocessed every input in one
    # first, as for the handler)
    async def admit(*args):
        waiting = blocks._queue.event_queue_per_concurrency_id.get(fn.concurrency_id)
        full = waiting is not None and len(waiting.queue) >= WAITING
        verdicts = [gr.validate(not (full and i == shown), refused if full and i == shown else "")
                    for i in range(count)]
        return verdicts[0] if count == 1 else tuple(verdicts)

    return admit


def start_with(component, result):
    """Lays `component` out showing `result`, one output of an event's results, as the page would after the event:
    a value, an update (its value and settings: a dropdown's choices, a box made visible) or gr.skip() (left as it
    is). Gradio builds the component again from its arguments and the update, as it does for an update an event
    sends (`postprocess_data`); the laid-out one takes the values that changed."""
    update = result if isinstance(result, dict) and result.get("__type__") == "update" else {"value": result}
    changes = {key: value for key, value in update.items() if key != "__type__"}
    if not changes:  # gr.skip()
        return
    built = type(component)(**{**component.constructor_args, **changes, "render": False})
    for key in changes:
        setattr(component, key, getattr(built, key))
    component.constructor_args.update({key: value for key, value in changes.items() if key != "value"})


def model_loader(chooser, key, tab):
    """A step that loads `chooser`'s model `choice` (of kind `key`, for `tab` in the messages) before the event
    that runs it, saying so meanwhile (an HTML status, then empty); a failure is left for that event to say (the
    chooser remembers it)."""

    def load_first(choice):
        if not chooser.is_loaded(key, choice, tab):
            yield model_choice.loading_html(choice, keeps=False)
            try:
                chooser.get(key, choice, tab)
            except model_choice.ModelChoiceError:
                pass
        yield ""

    return load_first


def set_values(results: dict) -> dict:
    """The values that an event's `results` (output id -> a value or an update) set: a value, or an update's value
    (the token picker's, which sets its choices too); gr.skip() and an update without a value set none."""
    values = {}
    for key, result in results.items():
        if isinstance(result, dict) and result.get("__type__") == "update":
            if "value" not in result:
                continue
            result = result["value"]
        values[key] = result
    return values


def left_on_success(ui, count: int):
    """`ui`, a `keep_results` function, with its last `count` error boxes left as they are where it would hide
    them (a success): each still shows a message about its own field raised by this event (`Wiring.wire`'s
    `shows`)."""

    @functools.wraps(ui)
    def left(*args):
        results = ui(*args)
        boxes = [gr.skip() if box.get("visible") is False else box for box in results[len(results) - count:]]
        return (*results[:len(results) - count], *boxes)

    return left


class Wiring:
    """The events of one page (`blocks`, the gr.Blocks being laid out) and what their guards remember: which events
    would draw again what the page shows (`repeats`), the model boxes' choices being loaded now, per session
    (`loading`), the ids of the States that say what a tab's views were drawn for (`drawn`). `chooser`: the
    models a tab may run (`demo.model_choice.ModelChooser`), for the model boxes."""

    def __init__(self, blocks, chooser):
        self.blocks = blocks
        self.chooser = chooser
        self.repeats = RepeatedEvents()
        self.loading = InFlight()
        self.drawn = set()

    def drawn_state(self, value):
        """A State that says what a tab's views were drawn for (the text, the model), written by the tab's page
        and read by the events that redraw one view; `guarded` drops such an event when the page has drawn
        another."""
        return self.drawn_input(gr.State(value))

    def drawn_input(self, component):
        """`component`, an input that the tab's page sets and the view events read, guarded as a `drawn_state`
        is: the token picker, which a new text's page sets to that text's default token. Gradio reads a State
        when it runs the event, but the picker as the browser sent it: a view event sent before a new text's page
        and run after it read the new text with the old text's token, and said that token was wrong after the
        page had cleared every message. The picker's own event records the value the user gave it (`guarded`'s
        `picks`, which `wire` finds in its triggers) instead of being dropped for it."""
        self.drawn.add(component._id)
        return component

    def guarded(self, fn, event, outputs, skip_repeat=False, inputs=(), picks=()):
        """`fn`, a UI event's handler (one result per output), counted by `repeats` (`demo.repeats`): with
        `skip_repeat`, skipped (every output left as it is) when it would draw again what its outputs show (a
        dropdown's second `.input` of one click, a blur, a sub-tab reopened). Every event that writes an output
        of a skippable one must come through here (tests/test_app_layout.py checks it). `inputs`: the event's
        input components; one that reads a `drawn_state` (or a `drawn_input`) is dropped when the page has drawn
        another since it was sent. `picks`: the drawn inputs among them that this event's trigger is the user's
        change of (the token picker's own event): what they hold now, recorded, not checked."""
        repeats = self.repeats
        ids = tuple(c._id for c in outputs)
        writes = [i for i, c in enumerate(outputs) if c._id in self.drawn]
        picked = {c._id for c in picks}
        reads = [(i, c._id) for i, c in enumerate(inputs) if c._id in self.drawn and c._id not in picked]
        sets = [(i, c._id) for i, c in enumerate(inputs) if c._id in picked]

        def run(request: gr.Request, *args):
            session = getattr(request, "session_hash", None)
            skip = (gr.skip(),) * len(ids) if len(ids) > 1 else gr.skip()
            read = {key: args[i] for i, key in reads}
            if repeats.redrawn(session, read):  # sent before a page drew another text: that page shows its own views
                return skip
            chosen = {key: args[i] for i, key in sets}
            repeats.drew(session, chosen)  # the user's own change: what the page holds now
            read.update(chosen)  # ... until a page sets another
            started = repeats.begin(session, event, args, ids, skip_repeat)
            if started is None:
                return skip
            with held_warnings() as held:
                result = fn(*args)
            # a run started later writes all of these outputs (another example clicked, Enter pressed meanwhile):
            # this one's results are an older input's, and would cover the newer ones if it ends last; and a page
            # that ended meanwhile drew another text than the one this run drew. Its warnings go with it.
            if repeats.superseded(session, ids, started) or repeats.redrawn(session, read):
                return skip
            show_warnings(held)
            values = result if len(ids) > 1 else (result,)
            repeats.drew(session, set_values({ids[i]: values[i] for i in writes}))
            return result

        # named as the handler it runs (logs, tests); no __wrapped__: Gradio must see `request` to pass it
        run.__name__, run.__qualname__ = getattr(fn, "__name__", event), getattr(fn, "__qualname__", event)
        run.repeats = (event, skip_repeat)
        return run

    def wire(self, triggers, fn, inputs, outputs, error, name, on_load=False, ui_inputs=None, keep_undrawn=False,
             first=None, page=None, skip_repeats=False, queue=COMPUTE, clears=(), shows=()):
        """The UI event: `fn` with its errors in `error` and the previous results kept (`keep_results`), its
        results for the inputs' initial values shown when the page opens if `on_load` (every tab shows its default
        example computed: `show_at_start`); and the public API endpoint `name` (`api`). Both in `queue`; the UI
        event reads `ui_inputs` when given (the same parameters, some read from the page's State instead of the
        API's inputs or defaults: the tab's model, the text the views were drawn for, the visible view;
        `keep_undrawn`: see `keep_results`).
        `first`: (UI function, its outputs, its error box) run on the same inputs before `fn`, so that what `fn`
        adds to the page belongs to the same text; when it fails (its box says why, next to the input), `fn` does
        not run, nor when the inputs were edited while it ran (`error` says so: `EDITED`). `page`: (function,
        outputs) the UI event runs instead of `fn` (`fn`'s outputs first, then more views of the same input).
        `skip_repeats`: the UI event does not run again when nothing has changed (`guarded`; for a dropdown's
        `.input`, which fires on every blur). `queue`: COMPUTE, or SLOW for a slow
        handler (its UI event, its endpoint and its examples). `clears`: the tab's other error boxes (`error_box`)
        whose messages a success of this event makes stale (an error about a token of the text just replaced):
        hidden then, and the box that shows a message about its `fields` (`keep_results`' `others`). `shows`: the
        error boxes that show a message about their fields, as `clears` do, but that a success leaves as they are (a
        layer or head change reads the token only where the token's view is drawn: it does not make a message about
        the token stale). Returns the UI version (for the examples). Inputs and outputs: one component or a list, as
        Gradio's events take them."""
        inputs, outputs = components(inputs), components(outputs)
        page_fn, page_outputs = page or (fn, outputs)
        page_outputs = components(page_outputs)
        ui_inputs = components(ui_inputs) if ui_inputs else inputs
        clears = [*clears, *shows]  # from here on, the other boxes this event writes
        kept = keep_results(page_fn, len(page_outputs), keep_undrawn, [box.fields for box in clears])
        ui = read_sliders(left_on_success(kept, len(shows)) if shows else kept,
                          [(c.minimum, c.maximum) if isinstance(c, gr.Slider) else None for c in ui_inputs])
        # "always_last": a change made while a run is pending (a slider moved by keys or dragged) runs once more
        # after it, rather than being dropped
        event = dict(inputs=ui_inputs, outputs=[*page_outputs, error, *clears], api_name=f"{name}_ui",
                     api_visibility="private", trigger_mode="always_last", **queue)
        if on_load and not self.show_at_start(ui, ui_inputs, event["outputs"]):
            triggers = [*triggers, self.blocks.load]
        if first:
            first_ui, first_outputs, first_error = first

            first_event = getattr(first_ui, "repeat_event", f"{name}_first_ui")
            repeats = self.repeats

            def after_first(request: gr.Request, *args):
                *args, failed = args  # the first step's error box: empty unless it failed
                hidden = gr.update(value="", visible=False)  # fn's error, if one showed, is not this input's
                # the inputs are read again here: a text edited since the first step ran is not the one it
                # classified (What if? would show an edit of a text never classified, beside another's answer)
                edited = not repeats.started_with(getattr(request, "session_hash", None), first_event, tuple(args))
                if failed or edited:  # a failure is said next to the input; an edit, here (else nothing said)
                    said = gr.update(value=error_html(EDITED), visible=True) if edited and not failed else hidden
                    return *[gr.skip()] * len(page_outputs), said, *[gr.skip()] * len(clears)
                return ui(*args)

            after_first.__name__, after_first.__qualname__ = ui.__name__, ui.__qualname__  # the handler it runs

            then = {key: value for key, value in event.items() if key != "trigger_mode"}
            # the first step is the other event itself (its name counted alike): not run again on the same inputs
            # when nothing has changed its outputs since it ran (What if? right after Classify)
            first_step = self.guarded(first_ui, first_event, [*first_outputs, first_error], skip_repeat=True,
                                      inputs=ui_inputs)
            gr.on(triggers, first_step, ui_inputs, [*first_outputs, first_error], api_name=f"{name}_first_ui",
                  api_visibility="private", trigger_mode="always_last", **COMPUTE).then(
                after_first, **{**then, "inputs": [*ui_inputs, first_error]})
        else:
            # a drawn input whose own change triggers the event (the token picker's): the user's value, recorded
            picks = [t.__self__ for t in triggers if getattr(getattr(t, "__self__", None), "_id", None) in self.drawn]
            gr.on(triggers, self.guarded(ui, f"{name}_ui", event["outputs"], skip_repeats, ui_inputs, picks), **event)
        api(fn, inputs, outputs, name, queue)
        ui.repeat_event = f"{name}_ui"  # what `guarded` counts it as: another event's first step is counted alike
        ui.queue = queue  # its examples run in the same queue
        ui.clears = list(clears)  # and write the same error boxes
        return ui

    def show_at_start(self, ui, inputs, outputs) -> bool:
        """Lays the `outputs` out showing `ui`'s results for the `inputs`' initial values (`start_with`), computed
        once now: the page opens on a tab's default view without an event. Each one was an event of the page's
        `load` once: nine a page view, which filled the queue's 64 places when ten visitors came at once, for
        results the same for all of them. Returns False, nothing laid out, when the computation warned: the view is
        left to an event of the page's load then, so that every visitor sees the warning."""
        values = [c.value if c.stateful else c.preprocess(c.value) for c in inputs]
        with held_warnings() as held:
            results = ui(*values)
        if held:
            return False
        for component, result in zip(outputs, results):
            start_with(component, result)
        return True

    def queue(self):
        """The page's queues (`COMPUTE`, `SLOW`, `LOAD`), each refusing a request when `WAITING` wait in it already
        (`admission`), every queued event of the page included (app.py lays some out with `**SLOW` itself); Gradio's
        own bound on them all together is off (it refused every endpoint's requests once /attention's had filled
        it). A queued event runs through its queue only: Gradio's direct route (POST /gradio_api/run/<endpoint>,
        open everywhere but on a Space) would skip the admission and the queues' limits.
        Gradio preprocesses the inputs before the admission check, and an input whose preprocessing fails there is
        refused with its message as the request joins the queue (HTTP 400: the page shows the message; gradio_client
        raises an HTTP error without it). The public endpoints' inputs take any value (tests/test_app_layout.py
        checks it): a wrong one reaches the handler, whose message says what is wrong."""
        for fn in self.blocks.fns.values():
            if fn.queue:
                fn.validator = admission(self.blocks, fn)
        self.blocks.queue(default_concurrency_limit=CONCURRENCY, max_size=None, api_open=False)

    def examples(self, rows, inputs, outputs, ui, error, name, run_inputs=None, labels=None, columns=None,
                 model_state=None):
        """Examples that fill the inputs, then run `ui` (from `wire`) on `run_inputs` (default: those inputs; a
        tab's other inputs too, and its model: the tab's State, or the box an example sets) in `ui`'s queue, the
        shared compute one or SLOW (gr.Examples' own run_on_click event would get a concurrency group, and so a
        limit, of its own), counted by the repeats guard (`guarded`) as a run that always happens. `labels`: what
        each example shows instead of its text (a long one). `columns`: the indices of the inputs the examples show
        (default: all); the others are still set, e.g. a box an example clears. `model_state`: (the model box an
        example sets, the tab's model State), set to the box's value once the example ran, so that the box and the tab
        agree (it is set without an event of its own: the example ran on the box's model already)."""
        # the page's own events, not the API (a client that called them got a traceback for a bad index): private
        shown = gr.Examples(rows, inputs, api_name=f"{name}_example", example_labels=labels, visible_columns=columns,
                            api_visibility="private")
        run_inputs = components(run_inputs or inputs)
        outputs = [*components(outputs), error, *ui.clears]
        run = shown.load_input_event.then(
            self.guarded(ui, f"{name}_example_run", outputs, inputs=run_inputs), run_inputs,
            outputs, api_name=f"{name}_example_run", api_visibility="private", **ui.queue)
        if model_state:
            box, current = model_state
            run.then(lambda choice: choice, box, current, queue=False, api_name=f"{name}_example_model",
                     api_visibility="private")

    def model_box(self, key, name, choices=None, value=model_choice.SHIPPED, choose=None, inputs=(), outputs=(),
                  tab=None):
        """A tab's model chooser: the shipped model (default) or a Hub repo id, loaded into our code on first
        use (`demo.model_choice`). Returns (the box, the tab's model as a State: its change reruns the tab). A
        choice that cannot be loaded leaves the tab on its current model and the box on the choice as typed (to be
        corrected; a suggested one, picked from the list, gives the box back the tab's model), the reason and the
        model still in use next to the box.
        Loading runs in a queue of its own (`LOAD`), so a large download never holds the compute queue.
        `choose(choice, current, *inputs)` -> (box, current, status, *outputs) replaces the `key` tab's default
        one. `tab`: the tab's name in the messages, when it is not the `key` tab (a tab that reads the fill-mask
        model too); the `key` tab's own is the chooser's (`ModelChooser.tab_names`: the Sentiment tab is "Classify"
        for a served topic classifier), as the handlers' messages name it."""
        box = gr.Dropdown(choices or model_choice.choices(key), value=value, label="Model",
                          allow_custom_value=True, info=model_choice.hub_note(), elem_id=f"{name}-model")
        # the served model's tokenizer notes, if any, on the page's first view (as a choice's status shows them)
        status = gr.HTML(model_choice.opening_status(self.chooser.models, key, value), elem_id=f"{name}-model-status")
        current = gr.State(value)
        asked = ("any", model_choice.ATTENTION_TAB) if key == "attention" else (key, tab)  # get_any reads either
        chooser, loading = self.chooser, self.loading

        def default_choose(choice, now):
            return chooser.choose(key, choice, now, tab)

        def choose_saying_so(request: gr.Request, choice, *rest):
            """A Hub model first says that it is loading (a download can take a while), then the outcome; the
            tab keeps its model meanwhile. The second request of one click (a dropdown's `.input` fires twice)
            leaves the outputs to the first."""
            session = getattr(request, "session_hash", None)
            with loading.first((session, name, repr((choice, *rest)))) as fresh:
                if not fresh and session is not None:
                    yield (gr.skip(),) * (3 + len(outputs))
                    return
                if not chooser.is_loaded(asked[0], choice, asked[1]):  # a load's note, not a cached answer's
                    yield (gr.skip(), gr.skip(), model_choice.loading_html(choice), *[gr.skip()] * len(outputs))
                yield (choose or default_choose)(choice, *rest)

        box.input(choose_saying_so, [box, current, *inputs], [box, current, status, *outputs],
                  api_name=f"{name}_model", api_visibility="private", show_progress="hidden", **LOAD)
        return box, current

    def load_first(self, trigger, box, status, key, tab, name):
        """On `trigger`, the model chosen in `box` (of kind `key`, for `tab`) loaded in the loading queue, with
        `status` saying so meanwhile (`model_loader`), as the private endpoint `{name}_load`. Returns the event, for
        the one that runs the model to follow (`.then`)."""
        return trigger(model_loader(self.chooser, key, tab), box, status, api_name=f"{name}_load",
                       api_visibility="private", show_progress="hidden", **LOAD)
