"""Which UI events would only draw again what the page already shows, so that they need not run.

Gradio 6's Dropdown fires its `.input` event twice when an option is clicked (the pick, then the blur that
follows, in the same millisecond: two identical runs at once, both compute slots held) and once more on every
blur, the value unchanged (Tab out of the Layer box redrew the attention grid, ~0.5 s). Reopening a sub-tab
whose inputs have not changed redrew it too. The app (demo/wiring.py, for app.py) asks `RepeatedEvents.begin`
before a UI event's handler: per browser session, each output carries a version, raised by every event that may write
it when it starts; an event may be skipped when it starts with the same inputs as its last start and none of its
outputs has been written since (by it or by another event), so what they show is what this run would draw.

That holds only if every event that writes those outputs is counted here: demo.wiring routes each of them through
the same guard, and tests/test_app_layout.py checks that no other event writes them. An event that should
always run (the Classify and Predict buttons, the attention page) is counted without being skipped
(`skip_repeat=False`); the Masking tab's event, its button included, is skipped when nothing has changed (the
same masks would be drawn). The model boxes are not counted here: the second request of one click leaves the
loading to the first (`InFlight`), and choosing the same model again later is a retry.

The same versions say when a run is out of date: when every output of a run has been claimed by a run that
started after it (another example clicked, Enter pressed while an example still ran), its results are dropped
(`superseded`), so the last click wins whichever run ends last. A step chained after an event (What if?'s
counterfactual after its classification) checks that the inputs it reads again are the ones the event ran on
(`started_with`).

And they say when what an event read is out of date: the attention tab's layer, head, token and sub-tab events
draw the text the views were drawn for (a State the page writes), not the text box. A layer picked while a new
text's page was queued or running was sent with the old text, and drawn over the new page when it ended last
(the old text's tokens under the new one's notes). The page records what it drew (`drew`); an event that read
another drawn state than the one recorded, when it starts or when it ends, is dropped (`redrawn`): the page
shows the new text, and its own layer and head. The token picker is drawn state too: Gradio reads a State when
the event runs, but the picker as the browser sent it, so an event sent before a new text's page and run after it
read the new text with the old text's token. The page records the token it set, the picker's own event the token
picked; an event that read another is dropped alike.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from contextlib import contextmanager

MAX_SESSIONS = 1024  # sessions remembered (a few KB each); the least recently active beyond are forgotten


PLAIN = (str, int, float, bool, type(None))


def _digest(inputs) -> bytes | None:
    """A fingerprint of an event's inputs, kept instead of the inputs (a text may be 200,000 characters, and a
    session keeps one per event); None when they hold anything but plain values, lists, tuples and dicts of
    them (then the event always runs)."""
    def plain(value) -> bool:
        if isinstance(value, (list, tuple)):
            return all(plain(v) for v in value)
        if isinstance(value, dict):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        return isinstance(value, PLAIN)

    if not plain(inputs):
        return None
    return hashlib.sha256(repr(inputs).encode("utf-8", "surrogatepass")).digest()


class RepeatedEvents:
    """The outputs' versions and each event's last start, per browser session; thread-safe (Gradio runs
    handlers in threads)."""

    def __init__(self, max_sessions: int = MAX_SESSIONS):
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, dict] = OrderedDict()
        self._lock = threading.Lock()

    def begin(self, session: str | None, event: str, inputs: tuple, outputs: tuple,
              skip_repeat: bool = True) -> tuple | None:
        """Whether the UI event `event` starting now with `inputs`, writing the outputs `outputs` (their ids),
        has to run: None when it is skipped; otherwise its start is counted (its outputs' versions raised) and
        those versions are returned (its token for `superseded`). `session`: the browser session (None, e.g. a
        call without one: it runs, and () is returned)."""
        if session is None:
            return ()
        with self._lock:
            state = self._sessions.pop(session, None) or {"versions": {}, "last": {}}
            self._sessions[session] = state  # now the most recently active
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
            versions = state["versions"]
            last = state["last"].get(event)
            digest = _digest(inputs)
            if (skip_repeat and last is not None and digest is not None and last[0] == digest
                    and last[1] == tuple(versions.get(o, 0) for o in outputs)):
                return None
            for o in outputs:
                versions[o] = versions.get(o, 0) + 1
            state["last"][event] = (digest, tuple(versions[o] for o in outputs))
            return state["last"][event][1]

    def superseded(self, session: str | None, outputs: tuple, started: tuple) -> bool:
        """Whether every one of a run's outputs has been claimed, since the run started with versions `started`
        (`begin`), by a run that started later: its results are an older input's, and the later run draws all of
        them (two examples clicked in turn: the first, slower one finished last and covered the second's)."""
        if session is None or not started:
            return False
        with self._lock:
            versions = (self._sessions.get(session) or {}).get("versions", {})
            return all(versions.get(o, 0) > v for o, v in zip(outputs, started))

    def started_with(self, session: str | None, event: str, inputs: tuple) -> bool:
        """Whether `event`'s last counted start had these inputs (a step chained after it reads the inputs again
        when it starts: a text edited meanwhile is another text than the one the event ran on)."""
        if session is None:
            return True
        with self._lock:
            last = (self._sessions.get(session) or {}).get("last", {}).get(event)
            digest = _digest(inputs)
            return last is None or digest is None or last[0] == digest

    def drew(self, session: str | None, values: dict) -> None:
        """Records the drawn state a run has just written: `values`, component id -> the value (a text, a model
        name) the page now holds."""
        if session is None:
            return
        with self._lock:
            state = self._sessions.get(session)
            if state is not None:
                state.setdefault("drawn", {}).update({key: _digest(value) for key, value in values.items()})

    def redrawn(self, session: str | None, values: dict) -> bool:
        """Whether the drawn state an event read (`values`, component id -> the value it was sent) is no longer
        what the page holds: a run recorded (`drew`) another value since. Nothing recorded yet: not redrawn."""
        if session is None:
            return False
        with self._lock:
            drawn = (self._sessions.get(session) or {}).get("drawn", {})
            return any(key in drawn and drawn[key] != _digest(value) for key, value in values.items())


class InFlight:
    """The runs going on now, by key: a model box's `.input` fires twice for one click, and both requests would
    load the same Hub model, each holding a slot of the loading queue for the whole download (the second waiting
    on the model's lock). `first(key)` says whether this run is the only one with that key; a second one started
    meanwhile can leave the outputs to it."""

    def __init__(self):
        self._running: set = set()
        self._lock = threading.Lock()

    @contextmanager
    def first(self, key):
        """A context whose value is True for the one run of `key` (hashable) at a time, False for any other run
        of the same key started while it goes on."""
        with self._lock:
            fresh = key not in self._running
            self._running.add(key)
        try:
            yield fresh
        finally:
            if fresh:
                with self._lock:
                    self._running.discard(key)

