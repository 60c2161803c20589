"""RobertaConfig: one dataclass with Hugging Face's field names, plus named presets."""
from __future__ import annotations

import dataclasses
import math
import operator
import os
from dataclasses import dataclass, field


MIN_LENGTH = 3  # the shortest input: <s>, one token, </s>


@dataclass
class RobertaConfig:
    vocab_size: int = 50265
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 514  # RoBERTa: max sequence length + pad_token_id + 1
    layer_norm_eps: float = 1e-5
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    classifier_dropout: float | None = None  # None: use hidden_dropout_prob
    initializer_range: float = 0.02
    hidden_act: str = "gelu"
    pad_token_id: int = 1
    bos_token_id: int = 0
    eos_token_id: int = 2
    # Sequence classification labels (id -> name); JSON turns int keys into strings, we turn them back.
    id2label: dict[int, str] = field(default_factory=lambda: {0: "LABEL_0", 1: "LABEL_1"})
    # Classifiers: probabilities are softmax(logits / calibration_temperature) (a multi-label model's
    # sigmoid(logits / T); a regression's outputs are not scaled), fitted after fine-tuning (train.calibrate).
    # The logits stay raw; `transformers` keeps the field as a config attribute but never applies it (its
    # pipeline shows uncalibrated scores). None (null in a config.json) is taken as 1.0.
    calibration_temperature: float = 1.0
    # As `transformers`: how a classifier's logits are read (PROBLEM_TYPES); None: single-label softmax, or a
    # sigmoid for a single output. The loss is inferred on its own, as `transformers` does
    # (`RobertaForSequenceClassification.classification_loss`): None gives mean squared error for a single
    # output, cross-entropy for integer labels, binary cross-entropy for float ones.
    problem_type: str | None = None

    def __post_init__(self):
        """Check every field (a config.json may hold anything); ValueError names the field and the problem."""
        if self.calibration_temperature is None:  # no calibration, as transformers' pipeline reads it
            self.calibration_temperature = 1.0
        if isinstance(self.eos_token_id, list) and self.eos_token_id:  # transformers accepts a list: its first
            self.eos_token_id = self.eos_token_id[0]
        if self.hidden_act == "gelu_python":  # transformers' other name of exact GELU, the same function
            self.hidden_act = "gelu"
        # numbers are kept as Python ints and floats, which config.json can hold (a numpy integer becomes an int)
        for name, low in _INTS.items():
            given, value = getattr(self, name), whole_number(getattr(self, name))
            if value is None:
                why = _WHY_NEEDED.get(name, "")
                raise ValueError(f"{name} must be an integer, got {given!r}" + (f": {why}" if why else ""))
            if value < low:
                raise ValueError(f"{name} must be at least {low}, got {value}")
            setattr(self, name, value)
        for name, (low, high, low_open) in _FLOATS.items():
            value = getattr(self, name)
            if value is None and name in _OPTIONAL:
                continue
            whole = whole_number(value)
            if whole is not None:
                value = whole
                setattr(self, name, value)
            elif not (isinstance(value, float) and math.isfinite(value)):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if value < low or (low_open and value == low) or (high is not None and value > high):
                bounds = f"{'above' if low_open else 'at least'} {low}" + (f" and at most {high}" if high else "")
                raise ValueError(f"{name} must be {bounds}, got {value}")
        if self.hidden_act != "gelu":
            raise ValueError(f"hidden_act: only 'gelu' (exact GELU; 'gelu_python' is the same function) is "
                             f"supported, got {self.hidden_act!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be divisible by "
                             f"num_attention_heads ({self.num_attention_heads})")
        for name in ("pad_token_id", "bos_token_id", "eos_token_id"):
            if getattr(self, name) >= self.vocab_size:
                raise ValueError(f"{name} ({getattr(self, name)}) must be below vocab_size ({self.vocab_size})")
        if self.max_length < MIN_LENGTH:  # positions start after pad_token_id
            raise ValueError(f"max_position_embeddings ({self.max_position_embeddings}) must be at least "
                             f"pad_token_id + {MIN_LENGTH + 1} = {self.pad_token_id + MIN_LENGTH + 1} (room for <s>, "
                             "a token and </s>)")
        self.id2label = _check_id2label(self.id2label)
        if self.problem_type not in PROBLEM_TYPES:
            raise ValueError(f"problem_type must be one of {PROBLEM_TYPES}, got {self.problem_type!r}")
        if self.problem_type == "single_label_classification" and self.num_labels == 1:  # as transformers refuses
            raise ValueError("problem_type 'single_label_classification' needs at least 2 labels, but id2label names "
                             "one: give two labels for a yes/no classifier, or problem_type 'regression' for a "
                             "single output")

    @property
    def num_labels(self) -> int:
        return len(self.id2label)

    @property
    def label2id(self) -> dict[str, int]:
        return {v: k for k, v in self.id2label.items()}

    @property
    def max_length(self) -> int:
        """Longest input (special tokens included) the position table can hold."""
        return self.max_position_embeddings - self.pad_token_id - 1

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_hf_dict(self, architecture: str) -> dict:
        """The config.json that `transformers` reads as a RoBERTa checkpoint (and so do we)."""
        d = self.to_dict()
        d.update(
            model_type="roberta",
            architectures=[architecture],
            type_vocab_size=1,  # RoBERTa has no segments; we save a single all-zero segment row
            tie_word_embeddings=True,
            label2id=self.label2id,
            position_embedding_type="absolute",
            dtype="float32",  # compute dtype, whatever the stored one (transformers would else adopt float16 files')
        )
        d["id2label"] = {str(k): v for k, v in self.id2label.items()}
        if not architecture.endswith("ForSequenceClassification"):
            del d["calibration_temperature"]  # classifiers' settings: an MLM's config.json does not carry them
            del d["problem_type"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RobertaConfig":
        """Build from a dict (e.g. a config.json), ignoring keys that are not fields; a field it lacks takes
        roberta-base's value (the defaults above), not `transformers.RobertaConfig`'s (layer_norm_eps 1e-12, 512
        positions), which `save_pretrained` always writes out. As `transformers`, a
        `num_labels` without `id2label` names its labels LABEL_0, LABEL_1, ... Refused first, as another model
        than this package runs: a model_type outside MODEL_TYPES (none given is taken as RoBERTa), relative
        position embeddings, a decoder."""
        model_type = d.get("model_type")
        if model_type is not None and model_type not in MODEL_TYPES:
            raise ValueError(f"model_type {model_type!r} is not a RoBERTa checkpoint ({', '.join(MODEL_TYPES)})")
        position = d.get("position_embedding_type", "absolute")
        if position != "absolute":
            raise ValueError(f"position_embedding_type {position!r} is not supported (only 'absolute')")
        if d.get("is_decoder") or d.get("add_cross_attention"):
            raise ValueError("a decoder (is_decoder or add_cross_attention, e.g. RobertaForCausalLM): this package's "
                             "encoder attends in both directions, and would run it as one")
        names = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in d.items() if k in names}
        if "num_labels" in d and "id2label" not in d:
            fields["id2label"] = default_labels(d["num_labels"])
        return cls(**fields)

    @classmethod
    def from_preset(cls, name: str, tokenizer=None, **overrides) -> "RobertaConfig":
        """A named preset; with a tokenizer (a `tokenizers.Tokenizer` or a `transformers` fast tokenizer), the
        vocabulary and special ids follow it."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        if tokenizer is not None:
            # not roberta.tokenizer.as_tokenizer, which also reads a path: that module imports this one
            tokenizer = getattr(tokenizer, "backend_tokenizer", tokenizer)  # a transformers tokenizer's own
            if not callable(getattr(tokenizer, "token_to_id", None)):
                path = isinstance(tokenizer, (str, os.PathLike))
                read = " (roberta.load_tokenizer reads a path or folder)" if path else ""
                raise TypeError(f"tokenizer must be a tokenizers.Tokenizer or a transformers fast tokenizer, got "
                                f"{type(tokenizer).__name__}{read}")
            special = {"pad_token_id": "<pad>", "bos_token_id": "<s>", "eos_token_id": "</s>"}
            for key, token in special.items():
                token_id = tokenizer.token_to_id(token)
                if token_id is None:
                    raise ValueError(f"the tokenizer has no {token} token")
                overrides.setdefault(key, token_id)
            overrides.setdefault("vocab_size", tokenizer.get_vocab_size())
        return dataclasses.replace(PRESETS[name], **overrides)


# Checked by RobertaConfig.__post_init__: integer fields and their least value; number fields and their range
# (low, high or None, whether low itself is excluded); number fields that may also be None.
_INTS = {"vocab_size": 1, "hidden_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1,
         "intermediate_size": 1, "max_position_embeddings": 1, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0}
_FLOATS = {"layer_norm_eps": (0, None, True), "hidden_dropout_prob": (0, 1, False),
           "attention_probs_dropout_prob": (0, 1, False), "classifier_dropout": (0, 1, False),
           "initializer_range": (0, None, False), "calibration_temperature": (0, None, True)}
_OPTIONAL = {"classifier_dropout"}
# Why a field that may not be None elsewhere (transformers allows it) is needed here
_WHY_NEEDED = {"pad_token_id": "RoBERTa's position ids count from pad_token_id + 1 and padding takes position "
                               "pad_token_id, so the model needs a padding id"}
# config.json model_type values whose checkpoints are this architecture, tensor names included (XLM-R, CamemBERT)
MODEL_TYPES = ("roberta", "xlm-roberta", "camembert")
PROBLEM_TYPES = (None, "single_label_classification", "multi_label_classification", "regression")


def whole_number(value) -> int | None:
    """`value` as a Python int when it is a whole number (a Python, numpy or one-element torch integer; not a
    bool), else None: what the package's integer arguments take (a config.json's fields are Python ints only)."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def default_labels(num_labels) -> dict[int, str]:
    """`transformers`' label names for `num_labels` labels: {0: "LABEL_0", 1: "LABEL_1", ...}."""
    count = whole_number(num_labels)
    if count is None or count < 1:
        raise ValueError(f"num_labels must be a whole number >= 1, got {num_labels!r}")
    return {i: f"LABEL_{i}" for i in range(count)}


def label_names(id2label: dict) -> list[str]:
    """A classifier's label names in the order of their ids (the keys may be strings, as in a config.json)."""
    return [str(name) for _, name in sorted(id2label.items(), key=lambda item: int(item[0]))]


def _check_id2label(id2label) -> dict[int, str]:
    """{0: name, 1: name, ...}: ids 0..n-1 (JSON's string keys "0", "1" accepted), distinct names."""
    if not isinstance(id2label, dict) or not id2label:
        raise ValueError(f"id2label must be a non-empty mapping {{id: label name}}, got {id2label!r}")
    out = {}
    for key, name in id2label.items():
        label_id = whole_number(key)
        if label_id is None:
            try:
                label_id = int(str(key).strip())
            except ValueError:
                raise ValueError(f"id2label: key {key!r} is not a label id (0, 1, ...)") from None
        if not isinstance(name, (str, int)) or isinstance(name, bool):
            raise ValueError(f"id2label: the name of label {key!r} must be a string, got {name!r}")
        out[label_id] = str(name)
    if sorted(out) != list(range(len(out))):
        raise ValueError(f"id2label: ids must be 0..{len(out) - 1}, got {sorted(out)}")
    if len(set(out.values())) != len(out):
        raise ValueError(f"id2label: label names must be distinct, got {list(out.values())}")
    return dict(sorted(out.items()))


PRESETS: dict[str, RobertaConfig] = {
    # The reference MiniRoBERTa: 17.76M parameters with the MLM head at vocab 50,265 (13.3M with the shipped
    # 32,768-token tokenizer), 128-token inputs.
    "mini": RobertaConfig(
        hidden_size=256, num_hidden_layers=6, num_attention_heads=8, intermediate_size=1024,
        max_position_embeddings=130,
    ),
    "roberta-base": RobertaConfig(),
    # For tests: seconds to build and run.
    "tiny": RobertaConfig(
        vocab_size=1000, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=66,
    ),
}
