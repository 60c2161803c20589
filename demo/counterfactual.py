"""The Sentiment tab's "What if?": take the word that pushed the answer most (its integrated-gradients
attribution, `demo.explain`), remove it or negate it, and let the classifier read each edited text.

Pure text work, no model: `strongest_word` picks the word, `propose` writes the edits, `outcome_markdown` and
`outcome_data` show what the classifier answered (the handler, `Handlers.counterfactual`, runs it on every
edit in one batch). The rules are deliberately simple, so a learner can predict them:

- remove: the word goes, with the space before or after it; a sentence-final . ! ? stays (and a comma
  attached to the word goes with it); a comma, semicolon or colon that would be left dangling at the end of the
  sentence or text goes too ("great, great, great!" -> "great, great!", not "great, great,!");
- drop the negation: a "not" or "never" just before the word is removed; a "n't" on the word before is undone
  ("isn't bad" -> "is bad", "won't" -> "will"); a word that is itself the negation loses it;
- opposite: the word is swapped for its opposite from a short list (`ANTONYMS`: good <-> bad,
  great <-> terrible, love <-> hate, ...), in the same case;
- add "not": after is/was/are/were/am/be/been (and "it's", "they're", "I'm"), "not" is inserted before the word
  (not where a bare copula opens a sentence, or in a question: "Is it good?", "Where was the plot going?");
  a word that is itself one of them (not "be" or "been": "has not been") gets "not" after it ("was terrible" ->
  "was not terrible"), with the same exception.

No part of speech is checked: "was a" becomes "was not a", which is still English. Every rule that applies
gives one row; two edits that give the same text are shown once. The negation rules are sentiment edits: for a
classifier none of whose labels names a sentiment (a topic classifier's "world", "sports"...), only the removal
is tried, and the table says why.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from roberta.run_metrics import said_list

from .formatting import LINE_BREAK_RE, VISIBLE_RE, format_probability, markdown_table, md_escape, short_text
from .tokens_view import word_spans

PAIRS = [("good", "bad"), ("great", "terrible"), ("excellent", "awful"), ("wonderful", "horrible"),
         ("best", "worst"), ("better", "worse"), ("love", "hate"), ("loved", "hated"), ("loves", "hates"),
         ("liked", "disliked"), ("beautiful", "ugly"), ("gorgeous", "hideous"), ("brilliant", "dreadful"),
         ("interesting", "boring"), ("exciting", "dull"), ("funny", "unfunny"), ("happy", "sad"),
         ("smart", "stupid"), ("fresh", "stale"), ("strong", "weak"), ("masterpiece", "disaster")]
ANTONYMS = {**dict(PAIRS), **{b: a for a, b in PAIRS}}
NEGATORS = {"not", "never"}
# "n't" forms whose positive is not the word without "n't"
NOT_CONTRACTIONS = {"can't": "can", "won't": "will", "shan't": "shall", "ain't": "is", "cannot": "can"}
COPULAS = {"is", "was", "are", "were", "am", "be", "been"}
FINITE_COPULAS = COPULAS - {"be", "been"}  # "not" after these; "has been not great" is no English
COPULA_CONTRACTIONS = ("'s", "'re", "'m")  # it's, they're, I'm (and, sometimes wrongly, a possessive 's)
SENTENCE_END_RE = re.compile(r"[.!?…]+$")
# what a word's edges lose when it is named ("film." -> "film", "(great)" -> "great"); "<", ">", "&", "#", "@",
# "$" and "%" stay: they belong to what was typed ("<b>", "#1", "100%")
EDGE_PUNCTUATION = ".,;:!?…\"'“”‘’«»()[]{}*¡¿"
CONTEXT_WORDS = 8  # words shown on each side of an edit
LEFTOVER = " .,;:!?…\"'"  # an edited text of only these (what removing "good." leaves) is no text
SEPARATORS = ",;:"  # left dangling before a sentence end or the text's end by a removal, they go with it


@dataclass(frozen=True)
class Edit:
    """One change of the text: text[start:end] becomes `new`; `kind` is "remove" or "negate", `what` says
    it in words."""

    kind: str
    what: str
    start: int
    end: int
    new: str = ""

    def apply(self, text: str) -> str:
        return text[:self.start] + self.new + text[self.end:]

    def marked(self, text: str) -> str:
        """The edited text as Markdown (user text escaped): what went ~~struck through~~, what came in
        **bold**, at most `CONTEXT_WORDS` words of context each side, on one line: each line break a space (a
        table row ends at any of them, a CR too)."""
        before, old, after = text[:self.start], text[self.start:self.end], text[self.end:]
        gap = " " if old.strip() and self.new.strip() else ""  # "~~good~~ **bad**"
        shown = (_context(before, last=True) + _wrap(old, "~~") + gap + _wrap(self.new, "**") +
                 _context(after, last=False))
        return LINE_BREAK_RE.sub(" ", shown)


def _wrap(part: str, mark: str) -> str:
    """`part` escaped, its visible middle between `mark`s (Markdown wants no space just inside them)."""
    core = part.strip()
    if not core:
        return md_escape(part)
    lead = part[:len(part) - len(part.lstrip())]
    trail = part[len(part.rstrip()):]
    return f"{md_escape(lead)}{mark}{md_escape(core)}{mark}{md_escape(trail)}"


def _context(part: str, last: bool) -> str:
    """`part` escaped, cut to its last (or first) `CONTEXT_WORDS` words with "…" where text was left out."""
    spans = word_spans(part)
    if len(spans) <= CONTEXT_WORDS:
        return md_escape(part)
    if last:
        return "… " + md_escape(part[spans[-CONTEXT_WORDS][0]:])
    return md_escape(part[:spans[CONTEXT_WORDS - 1][1]]) + " …"


def _core(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of the word at text[start:end] without the punctuation around it (`EDGE_PUNCTUATION`; empty:
    the word is only punctuation)."""
    word = text[start:end]
    rest = word.lstrip(EDGE_PUNCTUATION)
    if not rest:
        return start, start
    core_start = end - len(rest)
    return core_start, core_start + len(rest.rstrip(EDGE_PUNCTUATION))


def core_word(text: str, start: int, end: int) -> str:
    """The word at text[start:end] as the app names it: without the punctuation around it (all of it when it is
    only punctuation: "!!!"), the rest as typed ("<b>", "😀"). Raw text: whoever shows it escapes it."""
    core_start, core_end = _core(text, start, end)
    return text[core_start:core_end] if core_end > core_start else text[start:end]


def _same_case(word: str, like: str) -> str:
    if len(like) > 1 and like.isupper():
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _positive_of(contraction: str) -> str | None:
    """"isn't" -> "is", "won't" -> "will": the word without its negation (None if it has none)."""
    lower = _plain(contraction)
    if lower in NOT_CONTRACTIONS:
        return _same_case(NOT_CONTRACTIONS[lower], contraction)
    if lower.endswith("n't") and len(lower) > 3:
        return contraction[:-3]
    return None


def strongest_word(words: list[tuple[int, int, float]], sign: float) -> tuple[int, int, float]:
    """The word that pushes most towards the answer: the largest `sign` * score (`sign` +1 when the answer is
    the label a plus score pushes towards, `explain.push_target`, else -1)."""
    if not words:
        raise ValueError("The text has no words to change.")
    return max(words, key=lambda w: sign * w[2])


def _removal(text: str, spans: list[tuple[int, int]], k: int, kind: str, verb: str) -> Edit:
    """Remove word `k` and one space next to it; a sentence-final . ! ? stays on the text. `what` is `verb`
    and the word as the app names it (`core_word`: “gorgeous”, though its comma goes too)."""
    start, end = spans[k]
    core_start, core_end = _core(text, start, end)
    keep = SENTENCE_END_RE.search(text, core_end, end) if core_end > core_start else None
    ended = k and SENTENCE_END_RE.search(text[spans[k - 1][0]:spans[k - 1][1]])  # the word before ends a sentence
    if keep and keep.start() == core_end and ended:  # "not. bad." -> "not.", not "not.."
        start = spans[k - 1][1]
    elif keep and keep.start() == core_end:  # "it." -> "." joins the word before: "i loved it." -> "i loved."
        start, end = _without_separators(text, spans[k - 1][1]) if k else start, keep.start()
    elif k + 1 < len(spans):  # "gorgeous, funny" -> "funny"
        end = spans[k + 1][0]
        if _lone_separator(text, spans[k + 1]) and (k == 0 or _without_separators(text, start) < start):
            # a spaced separator ("good , bad , fine") would be left dangling, or doubled: "good , fine"
            end = spans[k + 2][0] if k + 2 < len(spans) else len(text)
    elif k:
        start = _without_separators(text, spans[k - 1][1])
    return Edit(kind, f"{verb} “{short_text(core_word(text, *spans[k]))}”", start, end)


def _without_separators(text: str, end: int) -> int:
    """Where text[:end] ends without the commas, semicolons or colons at its end (`SEPARATORS`) and the whitespace
    before them: what the removal of the word after them, the last of its sentence, takes too ("great, great,
    great!" -> "great, great!"; "good , bad" -> "good")."""
    return len(text[:end].rstrip(SEPARATORS).rstrip())


def _lone_separator(text: str, span: tuple[int, int]) -> bool:
    """Whether the word at `span` is only commas, semicolons or colons (`SEPARATORS`): SST-2's spaced " , "."""
    return not text[span[0]:span[1]].strip(SEPARATORS)


def _plain(word: str) -> str:
    return word.lower().replace("’", "'")


def _no_not_after(text: str, spans: list[tuple[int, int]], k: int, bare: bool = True) -> bool:
    """Whether "not" after word `k`, a copula, would be no English: a `bare` one ("is", not "it's") opens a sentence
    ("Is it good?": no "Is not it good?"), or its sentence is a question ("Where was the plot going?": the first
    word from `k` on that ends a sentence ends it with "?")."""
    if bare and (k == 0 or SENTENCE_END_RE.search(text[spans[k - 1][0]:spans[k - 1][1]])):
        return True
    for start, end in spans[k:]:
        if found := SENTENCE_END_RE.search(text[start:end]):
            return "?" in found.group()
    return False


def _negations(text: str, spans: list[tuple[int, int]], k: int) -> list[Edit]:
    """The negation rules that apply to word `k` (see the module's docstring); a "not" or "never" itself is
    negated by its removal (`propose`)."""
    core_start, core_end = _core(text, *spans[k])
    core = text[core_start:core_end]
    lower = _plain(core)
    edits = []
    if (positive := _positive_of(core)) is not None:
        edits.append(Edit("negate", f"“{core}” → “{positive}”", core_start, core_end, positive))
    previous = None
    if k > 0:
        p_start, p_end = spans[k - 1]
        pc_start, pc_end = _core(text, p_start, p_end)
        if pc_end == p_end:  # no punctuation between the two words ("not, bad" is left alone)
            previous = (pc_start, pc_end, text[pc_start:pc_end])
    if previous and not (lower in NEGATORS or _positive_of(core)):
        pc_start, pc_end, word = previous
        before = _plain(word)
        if before in NEGATORS:
            edits.append(_removal(text, spans, k - 1, "negate", "drop"))
        elif (positive := _positive_of(word)) is not None:
            edits.append(Edit("negate", f"“{word}” → “{positive}”", pc_start, pc_end, positive))
        elif ((before in COPULAS or before.endswith(COPULA_CONTRACTIONS))
              and not _no_not_after(text, spans, k - 1, bare=before in COPULAS)):
            edits.append(Edit("negate", f"add “not” after “{word}”", spans[k][0], spans[k][0], "not "))
    following = _plain(core_word(text, *spans[k + 1])) if k + 1 < len(spans) else None
    if (lower in FINITE_COPULAS and core_end == spans[k][1] and following and following not in NEGATORS
            and not _no_not_after(text, spans, k)):
        # the copula itself ("the service was terrible"): "not" after it, as the rules say, not "no rule applies"
        edits.append(Edit("negate", f"add “not” after “{core}”", core_end, core_end, " not"))
    if lower in ANTONYMS:
        opposite = _same_case(ANTONYMS[lower], core)
        edits.append(Edit("negate", f"“{core}” → “{opposite}”", core_start, core_end, opposite))
    return edits


def propose(text: str, word: tuple[int, int, float], negate: bool = True) -> list[Edit]:
    """The edits of `word` ((start, end, score) in `text`): its removal, then every negation rule that
    applies (none unless `negate`: they are sentiment edits); an edit that leaves no words (nothing, or only
    punctuation), or repeats another's text, is left out."""
    spans = word_spans(text)
    if not spans:
        return []
    k = max(bisect.bisect_right([start for start, _ in spans], word[0]) - 1, 0)  # the word that holds `word`
    negator = negate and _plain(core_word(text, *spans[k])) in NEGATORS  # removing "not" negates
    removal = _removal(text, spans, k, "negate" if negator else "remove", "remove")
    edits, seen = [], set()
    for edit in [removal, *(_negations(text, spans, k) if negate else [])]:
        edited = edit.apply(text)
        if VISIBLE_RE.search(edited.strip(LEFTOVER)) and edited not in seen:
            seen.add(edited)
            edits.append(edit)
    return edits


def nothing_to_try(word: str, negate: bool = True) -> str:
    """Why What if? has no edit of `word`, the text's only word (`negate`: whether negation rules were tried)."""
    rules = ", and no negation rule applies to it" if negate else ""
    return (f"“{short_text(word)}” is the only word{rules}: removing it would leave nothing to read. Try a longer "
            "sentence.")


def _points(delta: float) -> str:
    """A change of probability in percentage points: "+12.3 points", "−4.0 points", one more decimal under 0.1
    ("+0.04 points": 6.08% -> 6.12% read "0.0 points" beside two different probabilities), "0.0 points" for what
    rounds to nothing even so."""
    shown = f"{delta * 100:+.1f}"
    if shown in ("+0.0", "-0.0"):
        shown = f"{delta * 100:+.2f}"
    return ("0.0" if shown in ("+0.00", "-0.00") else shown.replace("-", "−")) + " points"


def pushed_towards(attribution: float, toward: str, labels) -> str | None:
    """The label a word pushes the answer towards: `toward` (the label its attribution is measured against) for
    a plus, the other label for a minus (the most likely other one, when there are more than two; None for a
    one-output classifier, which has none), None for 0."""
    if attribution > 0:
        return toward
    others = [label for label in labels if label != toward]
    return others[0] if attribution < 0 and others else None


def outcome_data(text: str, word, toward: str, before: dict, edits: list[Edit], after: list[dict]) -> dict:
    """The counterfactual for API clients: the word (as the page names it, without the punctuation around it),
    its attribution, measured against `attribution_label` (`toward`: plus pushes towards it), the label it pushes
    towards (`towards`), the original answer, and per edit the edited text, the new answer and the change of
    P(`toward`) in points. The attribution is the word's integrated-gradients sum as measured, in the units of
    `explain.class_score` (for two labels the log-odds, before calibration), in which the words' pushes add up to
    the change from the all-<pad> input; /classify shows every word's divided by the strongest one's (±1), which
    for this word, the strongest towards the answer, is ±1 unless a word pushing against the answer is stronger."""
    rows = []
    for edit, probabilities in zip(edits, after):
        label = max(probabilities, key=probabilities.get)
        rows.append({"edit": edit.what, "text": edit.apply(text), "label": label, "score": probabilities[label],
                     "probabilities": probabilities,
                     "change_points": round(100 * (probabilities[toward] - before[toward]), 2) + 0.0})  # no -0.0
    label = max(before, key=before.get)
    others = sorted(before, key=before.get, reverse=True)
    return {"word": core_word(text, word[0], word[1]), "attribution": word[2], "attribution_label": toward,
            "towards": pushed_towards(word[2], toward, others),
            "original": {"text": text, "label": label, "score": before[label], "probabilities": before},
            "edits": rows}


def _row(edit: str, text: str, probabilities: dict, toward: str, change: str) -> list[str]:
    label = max(probabilities, key=probabilities.get)
    return [edit, text, f"{md_escape(label)} {format_probability(probabilities[label])}",
            format_probability(probabilities[toward]), change]


NEGATION_RULES = ("drop a “not”, “never” or “n't” before the word, swap it for its opposite from a short list "
                  "(good ↔ bad, great ↔ terrible, love ↔ hate, …), or add “not” after is/was/are/were")
CHANGE_SAID = ("A big change means the answer rested on that word. A small change does not mean the word was "
               "unimportant: other words may say the same thing, and a score near 100% barely moves.")


def outcome_markdown(text: str, word, toward: str, before: dict, edits: list[Edit], after: list[dict],
                     labels: list[str] | None = None) -> str:
    """A table: the original and every edited text (the change marked), the answer, P(`toward`) and its change.
    `labels`: the classifier's labels, given when none names a sentiment (`explain.names_a_sentiment`): only
    removals were tried (`propose`), and the text says so, and why."""
    answer = max(before, key=before.get)
    strongest = md_escape(short_text(core_word(text, word[0], word[1])))
    said = f"(**{md_escape(answer)}**, {format_probability(before[answer])})"
    towards_answer = word[2] != 0 and (word[2] > 0) == (answer == toward)
    first = (f"“{strongest}” pushed the answer {said} the most." if towards_answer else
             f"No word pushed towards the answer {said}; “{strongest}” pushed against it least.")
    tried = "Remove it" if labels else "Remove it or negate it"
    rows = [_row("original", Edit("", "", word[0], word[0]).marked(text), before, toward, "")]
    rows += [_row(md_escape(edit.what), edit.marked(text), probabilities, toward,
                  _points(probabilities[toward] - before[toward])) for edit, probabilities in zip(edits, after)]
    # P(toward) and its change right-aligned, their digits lined up
    lines = [f"**What if?** {first} {tried}, and the model answers:", "",
             markdown_table(["edit", "text", "answer", f"P({md_escape(toward)})", "change"], rows, numbers=[3, 4])]
    if labels:  # a topic classifier's answer is no sentiment for a negation to turn
        named = said_list([f"“{md_escape(short_text(label))}”" for label in labels])
        lines += ["", f"Only its removal is tried: this classifier's labels ({named}) name no sentiment, and the "
                  f"negation rules (a “not” dropped or added, good ↔ bad, …) are sentiment edits. {CHANGE_SAID}"]
        return "\n".join(lines)
    if not any(edit.kind == "negate" for edit in edits):
        lines += ["", f"No negation rule applies to “{strongest}”: only its removal is shown."]
    lines += ["", f"Negation rules: {NEGATION_RULES}. {CHANGE_SAID}"]
    return "\n".join(lines)
