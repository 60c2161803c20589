"""Inference pipelines shaped like `transformers.pipeline`: "fill-mask" and "sentiment-analysis".

    >>> fill = roberta.pipeline("fill-mask", model="path/to/folder")   # config.json, model.safetensors, tokenizer.json
    >>> fill("The capital of France is <mask>.")                        # [{score, token, token_str, sequence}, ...]

Fill-mask results match `transformers`' FillMaskPipeline, plus a "truncated": True key on every result of a
text that was cut to the model's maximum length. A classifier's results have the shape `transformers`'
TextClassificationPipeline gives with `top_k=None` (every label, best first; by default theirs gives the best
label alone). A classifier reads a longer text whole by default, in overlapping windows whose logits it averages
("windows": N on its results); `long_text="first"` cuts it to its first tokens, as `transformers`' pipeline does
when called with `truncation=True` (by default it does not cut, and a text past its position table fails). A
single-label classifier's scores are softmax(logits / config.calibration_temperature): the temperature fitted on
held-out data after fine-tuning (`train.calibrate`; 1.0, i.e. no change, for a model that was never calibrated),
which `transformers` never applies, so a calibrated model's scores differ there; a multi-label model's are
sigmoid(logits / T) per label, a regression's its raw outputs (config.problem_type, as `transformers`).
Shapes: B batch, T sequence length, V vocabulary, M masks in one text, L labels, nl layers.
"""
import os
import warnings

import torch

from . import checkpoint, hub, loading
from .config import whole_number
from .devices import parse_device
from .model import RobertaForMaskedLM, RobertaForSequenceClassification
from .tokenizer import (as_tokenizer, check_fits_model, check_special_tokens, encode, encode_windows, load_tokenizer,
                        mean_over_windows, refuse_lone_surrogate, text_list, which_text)

MAX_MASKS = 5  # most <mask> tokens one fill-mask input may hold
TOP_K = 5  # fill-mask results per mask unless asked (transformers' default, also what its top_k=None means)
MASK, ALT_MASK = "<mask>", "[MASK]"  # [MASK] (BERT's spelling) is accepted and read as <mask>
LONG_TEXT = ("windows", "first")  # how a classifier reads a text longer than its maximum length


class TargetPieceWarning(UserWarning):
    """A fill-mask target that is several tokens, scored by its first piece only (its own category, so that a
    caller that shows this itself can filter it out; the app asks `target_piece` instead and scores the pieces)."""


def _check_texts(texts) -> list[str]:
    """One text or a list of texts (`text_list`, a lone surrogate read as "?"), none of them empty; an error in a
    list names the text ("text 2 of 3 is empty")."""
    batch = text_list(texts, surrogates="replace")
    if not batch:
        raise ValueError(f"expected a text or a non-empty list of texts, got an empty {type(texts).__name__}")
    for i, text in enumerate(batch):
        if not text.strip():
            raise ValueError(f"{which_text(texts, i, len(batch))} is empty: type a sentence")
    return batch


def _masked(text: str, which: str = "the text") -> str:
    """One fill-mask text with [MASK] read as <mask>; an error naming the text (`which`) without a mask or with
    more than MAX_MASKS."""
    text = text.replace(ALT_MASK, MASK)
    n = text.count(MASK)
    if n == 0:
        raise ValueError(f"{which} has no mask ({text[:80]!r}): put {MASK} (or {ALT_MASK}) where a word should be "
                         "predicted")
    if n > MAX_MASKS:
        raise ValueError(f"{which} has {n} masks; at most {MAX_MASKS} are allowed")
    return text


def _count(name: str, value, expected: str = "a whole number >= 1") -> int:
    """`value` as an int >= 1: a Python, numpy or one-element torch integer, not a bool; else a ValueError naming
    `name` and what it `expected`."""
    count = whole_number(value)
    if count is None or count < 1:
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return count


def _batches(n: int, batch_size: int):
    """The slices of `n` items in batches of at most `batch_size`."""
    return [slice(start, start + batch_size) for start in range(0, n, batch_size)]


class Pipeline:
    """A model in eval mode on `device`, with its tokenizer (what `roberta.tokenizer.as_tokenizer` takes: a
    `tokenizers.Tokenizer`, a `transformers` fast tokenizer, a tokenizer.json path or a model folder). A list of
    texts is run `batch_size` texts (a classifier: `batch_size` windows) at a time, so a long list's forward passes
    need no more memory than one batch's. `tokenizer_name`: how the tokenizer's checks (`check_special_tokens`,
    `check_fits_model`) name it in their errors and warnings ("mlm/tokenizer.json"); None skips them, for a caller
    that has made them already (and said their warnings: one cause, one warning)."""

    model_class = torch.nn.Module

    def __init__(self, model, tokenizer, device=None, batch_size: int = 32, *,
                 tokenizer_name: str | None = "the tokenizer"):
        if not isinstance(model, self.model_class):
            kind = f"{type(model).__module__}.{type(model).__name__}"
            hint = (": convert it with roberta.convert.from_transformers(model)"
                    if kind.startswith("transformers.") else "")
            raise ValueError(f"{type(self).__name__} needs this package's {self.model_class.__name__}, got {kind}"
                             f"{hint}")
        tokenizer = as_tokenizer(tokenizer)
        if tokenizer_name is not None:
            check_special_tokens(tokenizer, tokenizer_name)
            check_fits_model(tokenizer, model.config, tokenizer_name)
        batch_size = _count("batch_size", batch_size)
        self.device = (torch.device("cuda" if torch.cuda.is_available() else "cpu") if device is None
                       else parse_device(device, "device"))
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.max_length = model.config.max_length
        self.batch_size = batch_size

    def _forward(self, texts):
        """Encode, run the model; returns logits, input_ids (B, T) on the CPU, truncated flags."""
        input_ids, attention_mask, truncated = encode(self.tokenizer, texts, self.max_length)  # (B, T)
        return self._logits(input_ids, attention_mask), input_ids, truncated

    def _logits(self, input_ids, attention_mask) -> torch.Tensor:
        """The model's logits for rows (N, T), `batch_size` rows per forward pass, as float32 on the CPU."""
        with torch.inference_mode():
            return torch.cat([self.model(input_ids[rows].to(self.device), attention_mask[rows].to(self.device))
                              .logits.float().cpu() for rows in _batches(len(input_ids), self.batch_size)])


class FillMaskPipeline(Pipeline):
    """Predict the tokens behind `<mask>` (or `[MASK]`), like `transformers`' fill-mask pipeline."""

    model_class = RobertaForMaskedLM

    def __call__(self, text, top_k: int | None = TOP_K, targets=None):
        """One text: a list of {score, token, token_str, sequence} for one mask, a list of such lists for several.
        A list of texts: a list of those. `top_k`: results per mask (None: TOP_K, as in `transformers`). `targets`
        (a word or list) restricts the candidates to those tokens."""
        top_k = TOP_K if top_k is None else _count("top_k", top_k)
        texts = _check_texts(text)
        texts = [_masked(t, which_text(text, i, len(texts))) for i, t in enumerate(texts)]
        target_ids = None if targets is None else self.target_ids(targets)
        # every batch encoded, and every text's masks found, before the first forward pass: a mask that truncation
        # cut off in the last text is refused before the model has run on the others
        batches = [self._encode_masked(texts, rows, text) for rows in _batches(len(texts), self.batch_size)]
        results = []
        for batch in batches:
            results += self._fill(*batch, top_k, target_ids)
        return results[0] if isinstance(text, str) else results

    def _encode_masked(self, texts, rows: slice, given):
        """One batch `texts[rows]` of masked texts, encoded: input_ids (B, T), attention_mask (B, T), truncated
        flags, and each text's mask positions, B of (M,); an error naming the text (as the call was `given`) if
        truncation cut off one of its masks."""
        input_ids, attention_mask, truncated = encode(self.tokenizer, texts[rows], self.max_length)  # (B, T)
        first = rows.start
        positions = [self._mask_positions(ids, text.count(MASK), which_text(given, first + i, len(texts)))
                     for i, (ids, text) in enumerate(zip(input_ids, texts[rows]))]  # B of (M,)
        return input_ids, attention_mask, truncated, positions

    def _fill(self, input_ids, attention_mask, truncated, positions, top_k, target_ids):
        """The results of one encoded batch of masked texts (`_encode_masked`)."""
        with torch.inference_mode():
            hidden = self.model.roberta(input_ids.to(self.device), attention_mask.to(self.device))[0]  # (B, T, H)
            at_masks = torch.cat([hidden[i, p.to(self.device)] for i, p in enumerate(positions)])  # (all M, H)
            # the vocabulary projection at the masks only: at every position it would be half of a short text's work
            logits = self.model.mlm_logits(at_masks).float().cpu()  # (all M, V)
        per_text = logits.split([len(p) for p in positions])  # B of (M, V)
        return [self._postprocess(per_text[i], positions[i], input_ids[i], top_k, target_ids, truncated[i])
                for i in range(len(input_ids))]

    def logit_lens(self, text: str) -> torch.Tensor:
        """The logit lens on one text: the MLM head reads every layer's output at each mask as if it were the
        last layer's. Returns probabilities (nl + 1, M, V), nl = config.num_hidden_layers: row 0 from the
        embeddings alone (the mask token and its position, before any attention), row nl the model's own prediction
        (what calling the pipeline scores). RoBERTa is post-norm, so each layer's output has just been through a
        LayerNorm, on the scale the head was trained on; but the head was trained on the last layer only."""
        if not isinstance(text, str):
            raise ValueError(f"logit_lens reads one text, got {type(text).__name__}")
        text = _masked(_check_texts(text)[0])
        input_ids, attention_mask, _ = encode(self.tokenizer, [text], self.max_length)  # (1, T)
        positions = self._mask_positions(input_ids[0], text.count(MASK))  # (M,)
        with torch.inference_mode():
            _, _, states = self.model.roberta(input_ids.to(self.device), attention_mask.to(self.device),
                                              output_hidden_states=True)  # nl + 1 of (1, T, H)
            at_masks = torch.stack([h[0, positions.to(self.device)] for h in states])  # (nl + 1, M, H)
            logits = self.model.mlm_logits(at_masks)  # (nl + 1, M, V)
        return logits.float().softmax(dim=-1).cpu()

    def _mask_positions(self, input_ids, n_masks: int, which: str = "the text") -> torch.Tensor:
        """Where the masks of one encoded text (T,) are, (M,); an error naming the text (`which`) if truncation cut
        any of them off."""
        positions = torch.nonzero(input_ids == self.tokenizer.token_to_id(MASK)).squeeze(-1)  # (M,)
        if len(positions) < n_masks:
            raise ValueError(f"{which} has {'a' if n_masks > 1 else 'its'} mask beyond the first {self.max_length} "
                             "tokens, which is all the model reads: shorten the text or move the mask earlier")
        return positions

    def target_ids(self, targets) -> torch.Tensor:
        """As `transformers`: a target that is a vocabulary entry is used as is, otherwise its first token, with a
        TargetPieceWarning when that is only part of it (as `transformers` logs one). (So "Paris" is the
        sentence-initial token; " Paris" is the word after a space, as in "of Paris".)"""
        targets = [targets] if isinstance(targets, str) else targets
        if not isinstance(targets, (list, tuple)) or not all(isinstance(t, str) for t in targets):
            raise ValueError(f"targets must be a word or a list of words, got {targets!r}")
        ids = []
        for target in targets:
            if (found := self.target_piece(target)) is None:
                continue  # transformers skips it too (with a warning)
            token_id, n_pieces = found
            if n_pieces > 1:
                piece = self.tokenizer.decode([token_id], skip_special_tokens=False)
                warnings.warn(f"the target {target!r} is not one token of the vocabulary: it is scored by its "
                              f"first piece {piece!r} only", TargetPieceWarning, stacklevel=3)
            ids.append(token_id)
        if not ids:
            raise ValueError(f"none of the targets {targets!r} is a token of this model's vocabulary")
        return torch.tensor(sorted(set(ids)), dtype=torch.long)

    def target_piece(self, target: str) -> tuple[int, int] | None:
        """The token a target is scored by and how many tokens the target is: a vocabulary entry as it is (1), else
        its first token; None for a target of no token at all (""). A ValueError naming a target that holds a lone
        surrogate: unlike a text's (read as "?"), its "?" would be scored as if it were the word."""
        refuse_lone_surrogate(target, f"the target {target!r}")
        if (token_id := self.tokenizer.token_to_id(target)) is not None:
            return token_id, 1
        pieces = self.tokenizer.encode(target, add_special_tokens=False).ids
        return (pieces[0], len(pieces)) if pieces else None

    def _postprocess(self, logits, positions, input_ids, top_k, target_ids, truncated):
        """One text's results from its logits at the masks (M, V), the masks' positions (M,) and its ids (T,)."""
        probs = logits.softmax(dim=-1)  # (M, V)
        if target_ids is not None:
            probs = probs[:, target_ids]  # (M, n_targets), not renormalised (as transformers)
        scores, picks = probs.topk(min(top_k, probs.shape[-1]), dim=-1)  # (M, k)
        pad_id = self.tokenizer.token_to_id("<pad>")
        single = len(positions) == 1
        rows = []
        for position, row_scores, row_picks in zip(positions.tolist(), scores.tolist(), picks.tolist()):
            row = []
            for score, pick in zip(row_scores, row_picks):
                token = int(target_ids[pick]) if target_ids is not None else pick
                ids = input_ids.clone()
                ids[position] = token
                ids = ids[ids != pad_id].tolist()
                # Several masks: keep special tokens, or the other <mask>s would vanish (as transformers)
                result = {"score": score, "token": token,
                          "token_str": self.tokenizer.decode([token], skip_special_tokens=False),
                          "sequence": self.tokenizer.decode(ids, skip_special_tokens=single)}
                if truncated:
                    result["truncated"] = True
                row.append(result)
            rows.append(row)
        return rows[0] if single else rows


class TextClassificationPipeline(Pipeline):
    """Label a text (e.g. sentiment): every label with its score, best first (`scores`: a probability, calibrated
    where the model has a calibration_temperature; a regression's raw output)."""

    model_class = RobertaForSequenceClassification

    @property
    def temperature(self) -> float:
        """config.calibration_temperature: the logits are divided by it before the softmax or sigmoid (1.0 =
        raw)."""
        value = getattr(self.model.config, "calibration_temperature", 1.0)
        value = 1.0 if value is None else float(value)
        if not (value > 0 and value < float("inf")):
            raise ValueError(f"the model's calibration_temperature must be a positive number, got {value!r}")
        return value

    def __call__(self, text, top_k: int | None = None, long_text: str | None = None, *, truncation=None,
                 function_to_apply=None):
        """One text: [{label, score}, ...] best first (all labels, or the best `top_k`). A list: a list of those.

        `long_text`, for a text longer than the model's maximum length: "windows" (None: the default) reads all of
        it, in overlapping windows of that length (`roberta.tokenizer.encode_windows`) whose logits are averaged,
        and marks each result with "windows": N; "first" reads its first tokens only and marks each result with
        "truncated": True, as `transformers`' pipeline reads it when called with `truncation=True`, which is taken
        here as "first" too. `function_to_apply` (`transformers`' choice of softmax, sigmoid or none) is refused:
        the scores follow config.problem_type (`scores`)."""
        if top_k is not None:
            top_k = _count("top_k", top_k, "None or a whole number >= 1")
        long_text = self._long_text(long_text, truncation)
        if function_to_apply is not None:
            raise ValueError(f"function_to_apply={function_to_apply!r} is not taken here: the scores follow the "
                             "model's config.problem_type (a softmax, or a sigmoid per label for multi-label, of the "
                             "logits divided by its calibration_temperature; a regression's raw outputs); for the "
                             "raw logits call the model itself (pipe.model)")
        texts = _check_texts(text)
        if long_text == "windows":
            logits, windows = self._forward_windows(texts)  # (B, L), (B,)
            flags = [{"windows": n} if n > 1 else {} for n in windows.tolist()]
        else:
            logits, _, truncated = self._forward(texts)  # (B, L)
            flags = [{"truncated": True} if cut else {} for cut in truncated]
        probs = self.scores(logits)  # (B, L)
        id2label = self.model.config.id2label
        results = []
        for row, flag in zip(probs.tolist(), flags):
            ranked = sorted(enumerate(row), key=lambda pair: -pair[1])[:top_k]
            results.append([{"label": id2label.get(i, f"LABEL_{i}"), "score": score, **flag} for i, score in ranked])
        return results[0] if isinstance(text, str) else results

    def _long_text(self, long_text: str | None, truncation) -> str:
        """`long_text` checked (None: "windows"), with `transformers`' truncation=True read as "first" (what it
        means there: the first max_length tokens); any other truncation, or one beside another long_text, is
        refused."""
        if truncation is not None:
            if truncation is not True or long_text not in (None, "first"):
                given = "" if long_text is None else f" with long_text={long_text!r}"
                raise ValueError(f"truncation={truncation!r}{given}: this pipeline takes long_text= instead, "
                                 f"'windows' (the default) to read a long text whole, 'first' for its first "
                                 f"{self.max_length} tokens only (what truncation=True means)")
            long_text = "first"
        long_text = "windows" if long_text is None else long_text
        if long_text not in LONG_TEXT:
            raise ValueError(f"long_text must be one of {LONG_TEXT}, got {long_text!r}")
        return long_text

    def scores(self, logits):
        """Logits (B, L) -> the scores shown: `scores_of` at the model's calibration `temperature`."""
        return scores_of(logits, self.model.config, self.temperature)  # (B, L)

    def _forward_windows(self, texts):
        """Logits (B, L) averaged over each text's windows, and the number of windows of each text (B,)."""
        input_ids, attention_mask, owner = encode_windows(self.tokenizer, texts, self.max_length)  # (W, T), (W,)
        logits = self._logits(input_ids, attention_mask)  # (W, L)
        return mean_over_windows(logits, owner, len(texts)), torch.bincount(owner, minlength=len(texts))


# How a classifier's logits become the scores shown, as `transformers` reads its config: the rule that decides
# (`score_rule`) -> the kind of scores (`score_kind`): "regression" (the raw outputs), "sigmoid" (one per label) or
# "softmax" (over the labels)
SCORE_RULES = {"regression": "regression",  # config.problem_type "regression"
               "multi_label_classification": "sigmoid",  # config.problem_type "multi_label_classification"
               "one_output": "sigmoid",  # num_labels 1 (as `transformers` saves one, with no problem_type)
               "single_label_classification": "softmax"}  # the rest


def score_rule(config) -> str:
    """Which rule of SCORE_RULES decides how a classifier of `config` is scored: its problem_type when that is
    "regression" or "multi_label_classification", else "one_output" for num_labels 1, else
    "single_label_classification"."""
    if config.problem_type in ("regression", "multi_label_classification"):
        return config.problem_type
    return "one_output" if config.num_labels == 1 else "single_label_classification"


def score_kind(config) -> str:
    """How a classifier's logits become the scores shown (`score_rule`): "regression" (the raw outputs), "sigmoid"
    (one per label: multi-label classification, or a single output) or "softmax"."""
    return SCORE_RULES[score_rule(config)]


def scores_of(logits, config, temperature: float = 1.0):
    """A classifier's logits (B, L) -> the scores shown, as `score_kind(config)` reads them: a regression's raw
    outputs, else the probabilities of logits / `temperature` (config.calibration_temperature; 1.0: uncalibrated),
    a sigmoid per label or a softmax over the labels. Dividing by the temperature never changes the ranking of the
    labels. The one place for this: the pipeline (and so the app) and `train.evaluate` call it."""
    kind = score_kind(config)
    if kind == "regression":
        return logits  # (B, L)
    logits = logits / temperature  # (B, L)
    return logits.sigmoid() if kind == "sigmoid" else logits.softmax(dim=-1)  # (B, L)


TASKS = {
    "fill-mask": FillMaskPipeline,
    "sentiment-analysis": TextClassificationPipeline,
    "text-classification": TextClassificationPipeline,
}


# ----- which class a model folder holds -----
MODEL_CLASSES = {cls.architecture: cls for cls in (RobertaForMaskedLM, RobertaForSequenceClassification)}


def model_class(architecture: str):
    """The model class for an architecture name of `checkpoint.ARCHITECTURES` (what config.json's `architectures` names,
    `checkpoint.read_architecture`): "RobertaForMaskedLM" -> RobertaForMaskedLM."""
    return MODEL_CLASSES[architecture]


def auto_model(model_id, **hub_kwargs):
    """The model a folder or Hub repo holds, as the class its config.json names (a masked LM where it names none),
    loaded strictly; `transformers`' bare encoder is an ArchitectureMismatch pointing to from_pretrained_encoder
    (`checkpoint.read_architecture`)."""
    return model_class(checkpoint.read_architecture(model_id, **hub_kwargs)).from_pretrained(model_id, **hub_kwargs)


def _load(task: str, model_class, model_id: str, **hub_kwargs):
    """`model_class.from_pretrained(model_id)`, a folder of another architecture than the task's refused in the
    pipeline's words, before any weight is read (a masked LM given to "sentiment-analysis" was a raw "does not fit
    ...: missing keys [...]"): `loading.check_architecture`, on the loader's one read of config.json."""
    hub.check_hub_kwargs(hub_kwargs)  # as from_pretrained: why= and advice= are the loader's, no option
    wanted = model_class.architecture
    why = f"the {task!r} pipeline needs {checkpoint.ARCHITECTURES[wanted][0]} ({wanted})"

    def advice(name: str) -> str:
        return f"use pipeline({checkpoint.task_of(name)!r}, ...) for this one"
    return loading.load_model(model_class, model_id, why=why, advice=advice, **hub_kwargs)


def pipeline(task: str, model, tokenizer=None, device=None, batch_size: int = 32, **hub_kwargs) -> Pipeline:
    """`model`: a model folder (config.json, model.safetensors, tokenizer.json), a Hub repo id, or a model object
    (then pass `tokenizer` too: what `roberta.tokenizer.as_tokenizer` takes, a `tokenizers.Tokenizer`, a
    `transformers` fast tokenizer, a tokenizer.json path or a folder). `device`: None
    (CUDA if there is one), a name or torch.device, or -1 / N as `transformers` spells the CPU / CUDA device N
    (N where there is no CUDA is an error here, not the CPU). `batch_size`: texts (a
    classifier's windows) per forward pass. `hub_kwargs` (revision, token, cache_dir, ...) are passed on when
    downloading from the Hub."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {sorted(TASKS)}")
    cls = TASKS[task]
    tokenizer_name = "the tokenizer"
    if not isinstance(model, (str, os.PathLike, torch.nn.Module)):  # None was "pass tokenizer= with a model object"
        raise TypeError(f"model must be a model folder, a Hub repo id or a model object, got {type(model).__name__}")
    if isinstance(model, (str, os.PathLike)):
        model_id = os.fspath(model)
        model = _load(task, cls.model_class, model_id, **hub_kwargs)
        if tokenizer is None:  # the folder's own, named by its file in what the pipeline's checks say
            tokenizer, tokenizer_name = load_tokenizer(model_id, **hub_kwargs), f"{model_id}'s {hub.TOKENIZER_NAME}"
    elif tokenizer is None:
        raise ValueError("pass tokenizer= together with a model object (a Tokenizer or a tokenizer.json path)")
    return cls(model, as_tokenizer(tokenizer, **hub_kwargs), device, batch_size, tokenizer_name=tokenizer_name)
