"""The notes and hints app.py computes at start-up from the loaded models are not worth failing the start-up for: a
crash inside one (a custom model, another tokenizer) leaves the note empty, and its traceback in the server's log
(not hidden). Each note's inner call is made to raise here, and the note read as app.py reads it."""
import logging
from types import SimpleNamespace

import pytest

from demo import embedding_view, explain, model_notes


class Crash(RuntimeError):
    """The failure made inside a note: a record's traceback must be of this one."""


def crash(*args, **kwargs):
    raise Crash("inside the note")


def _swap_hint(handlers, monkeypatch):
    monkeypatch.setattr(explain, "link_weights", crash)
    return handlers.swap_hint("The trophy did not fit in the suitcase because it was too big.", ("big", "small"),
                              ("it", "trophy"))


def _attention_hint(handlers, monkeypatch):
    monkeypatch.setattr(explain, "link_hint", crash)
    return handlers.attention_hint("The cat sat on the mat because it was tired.", ("it", "cat"))


def _previous_token_head(handlers, monkeypatch):
    monkeypatch.setattr(handlers, "attention_data", crash)
    return handlers.previous_token_head("The cat sat on the mat.")


def _analogy_probe_note(handlers, monkeypatch):
    monkeypatch.setattr(embedding_view, "score_analogies", crash)
    return handlers.analogy_probe_note()


def _example_failures(handlers, monkeypatch):
    mlm = SimpleNamespace(available=True, pipeline=crash)  # a served model whose pipeline fails
    return model_notes.example_failures(SimpleNamespace(mlm=mlm, sentiment=SimpleNamespace(available=False)))


def _words_in_pieces_said(handlers, monkeypatch):
    return model_notes.words_in_pieces_said(SimpleNamespace(encode=crash), "The dog barked.")


@pytest.mark.parametrize("note, empty, logger", [
    (_swap_hint, "", "demo.attention_handlers"),
    (_attention_hint, "", "demo.attention_handlers"),
    (_previous_token_head, None, "demo.attention_handlers"),
    (_analogy_probe_note, "", "demo.embedding_handlers"),
    (_example_failures, {"mlm": [], "sentiment": []}, "demo.model_notes"),
    (_words_in_pieces_said, "", "demo.model_notes"),
])
def test_a_note_that_crashes_is_empty_and_its_traceback_logged(handlers, monkeypatch, caplog, note, empty, logger):
    with caplog.at_level(logging.ERROR, logger=logger):
        said = note(handlers, monkeypatch)
    assert said == empty
    crashes = [record for record in caplog.records if record.name == logger and record.exc_info
               and isinstance(record.exc_info[1], Crash)]
    assert len(crashes) == 1, caplog.records
