"""Which UI events would only draw again what the page already shows, so that they need not run.

Gradio 6's Dropdown fires its `.input` event twice when an option is clicked (the pick, then the blur that
follows, in the same millisecond: two identical runs at once, both compute slots held) and once more on every
blur, the value unchanged (Tab out of the Layer box redrew the attention grid, ~0.5 s). Reopening a sub-tab
whose inputs have not changed redrew it too. The app (app.py) asks `RepeatedEvents.should_run` before a UI
event's handler: per browser session, each output carries a version, raised by every event that may write it
when it starts; an event may be skipped when it starts with the same inputs as its last start and none of its
outputs has been written since (by it or by another event), so what they show is what this run would draw.

That holds only if every event that writes those outputs is counted here: app.py routes each of them through
the same guard, and tests/test_app_layout.py checks that no other event writes them. An event that should
always run (the Classify and Predict buttons, the attention page) is counted without being skipped
(`skip_repeat=False`); the Masking tab's event, its button included, is skipped when nothing has changed (the
same masks would be drawn). The model boxes are not counted here: the second request of one click leaves the
loading to the first (`InFlight`), and choosing the same model again later is a retry.
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

    def should_run(self, session: str | None, event: str, inputs: tuple, outputs: tuple,
                   skip_repeat: bool = True) -> bool:
        """Whether the UI event `event` starting now with `inputs`, writing the outputs `outputs` (their ids),
        has to run; when it does, its start is counted (its outputs' versions raised). `session`: the browser
        session (None, e.g. a call without one: it runs)."""
        if session is None:
            return True
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
                return False
            for o in outputs:
                versions[o] = versions.get(o, 0) + 1
            state["last"][event] = (digest, tuple(versions[o] for o in outputs))
            return True


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

