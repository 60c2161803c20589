"""What every tab's handlers share (`HandlerBase`): the models loaded once at start-up, the Hub models a tab
can run instead (`demo.model_choice`), a tab's model checked, and a word typed in cleaned."""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Callable

from .model_choice import SHIPPED, ModelChooser
from .models import Models
from .validation import MAX_CHARS, MAX_WORD_CHARS, clean_text, fail

WORD_LIMIT = f"type one word of at most {MAX_WORD_CHARS} characters"  # a word box's limit, as its messages say it


class KeptResults:
    """The results of the last `size` calls of something slow, each kept for the object it was computed from (its
    `owner`: a model, a pipeline, an embedding table) while that object lives: one freed since (a Hub model the
    chooser evicted) is not kept alive, and the next object given its id finds nothing. Thread-safe: Gradio runs
    handlers in worker threads."""

    def __init__(self, size: int):
        self.size = size
        self.entries: OrderedDict = OrderedDict()  # (id(owner), key) -> (a weak reference to owner, the result)
        self.lock = threading.Lock()

    def get(self, owner, key, compute: Callable[[], object]):
        """`compute()`'s result for (`owner`, `key`), computed once among the last `size` (computed outside the lock:
        two calls at once may both compute it, and both get a whole result)."""
        entry = (id(owner), key)
        with self.lock:
            hit = self.entries.get(entry)
            if hit is not None and hit[0]() is owner:
                self.entries.move_to_end(entry)
                return hit[1]
        result = compute()
        with self.lock:
            self.entries[entry] = (weakref.ref(owner), result)
            self.entries.move_to_end(entry)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
        return result


class HandlerBase:
    """The models the handlers run. Each tab's class (demo/*_handlers.py) adds that tab's API endpoints to it;
    `demo.handlers.Handlers` is all of them over one set of models."""

    def __init__(self, models: Models, chooser: ModelChooser | None = None):
        self.models = models
        self.chooser = chooser or ModelChooser(models)  # the Hub models a tab can run instead (model=...)

    def _need(self, key: str, choice=SHIPPED, tab: str | None = None):
        """The `key` tab's model: the shipped one, or the chosen Hub model (loaded once; a `ModelChoiceError`,
        a ValueError, says plainly why one cannot be used). `tab`: the tab that asks, when another than the
        `key` tab (named in the messages)."""
        loaded = self.chooser.get(key, choice, tab)
        if not loaded.available:
            raise fail(loaded.error)
        return loaded

    @staticmethod
    def _word(value, name: str, limit: str = WORD_LIMIT) -> str:
        """A word typed in: invisible characters removed as from a text (`clean_text`), empty allowed (the views
        say so in their own words). `limit`: the box's, said of a paste even longer than a text may be (MAX_CHARS),
        where a text's would mislead; "" for a box of several words, whose limit is a text's."""
        if limit and isinstance(value, str) and len(value) > MAX_CHARS:
            raise fail(f"{name} is {len(value):,} characters long: {limit}.")
        return clean_text(value, name, required=False)
