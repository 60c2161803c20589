"""Whether a checkpoint fits the model a --resume command builds: what a state dict's shapes say of its model
(`model_shape`), the config fields that change the function its weights compute without showing in their shapes
(`ARCHITECTURE_OPTIONS`, kept in the trainer state), and the line that says which differ and how to go on
(`does_not_fit`, `architecture_differs`), and the options that choose a fine-tuning's held-out rows
(`held_out_rows_differ`). `train.trainer.Trainer` refuses a checkpoint that does not fit before it loads anything else
of it."""
from __future__ import annotations

from pathlib import Path

import torch


MODEL_KINDS = (("lm_head.", "masked LM (a pretraining run)"), ("classifier.", "classifier (a fine-tuning run)"))
# what a state dict's shapes tell of its model's config, by the option that sets it for a new model
SHAPE_OPTIONS = {"vocab_size": "the tokenizer's vocabulary", "hidden_size": "--hidden-size", "layers": "--layers",
                 "intermediate_size": "--intermediate-size", "max_length": "--model-max-length",
                 "labels": "--labels"}


# what a model's config sets of the function its weights compute without showing in their shapes, by the option that
# sets it: kept in the trainer state, and a --resume that changes one is refused as a change of shape is (the same
# weights would compute another function from the resumed step on). A checkpoint from before they were kept:
# its --heads option is compared (`architecture_differs`).
ARCHITECTURE_OPTIONS = {"num_attention_heads": "--heads", "layer_norm_eps": "--init"}


# the options that choose which rows of the training file a fine-tuning holds out (its calibration and dev slices, the
# IMDB sample's reviews, drawn from the --imdb file), by field name: (the option, the options whose slice it draws: it
# matters when one of them is set in either run). A --resume that changes one is refused: the run would train on rows
# its figures score as held out (the steps before it on rows of the new slices, or the steps after it on rows the
# first ones held out), and its metrics.json would record one choice for both. A checkpoint from before
# --dev-fraction held no dev slice out (UNRECORDED_HELD_OUT).
HELD_OUT_OPTIONS = {"train": ("--train", ()), "imdb": ("--imdb", ()), "calibration_n": ("--calibration-n", ()),
                    "calibration_seed": ("--calibration-seed", ("calibration_n",)),
                    "calibration_split": ("--calibration-split", ("calibration_n", "dev_fraction")),
                    "dev_fraction": ("--dev-fraction", ()), "dev_seed": ("--dev-seed", ("dev_fraction",)),
                    "imdb_n": ("--imdb-n", ("imdb",)), "imdb_seed": ("--imdb-seed", ("imdb",)),
                    "keep_imdb_sample": ("--keep-imdb-sample", ("imdb",))}
UNRECORDED_HELD_OUT = {"dev_fraction": 0.0}
# a file option compared by the digest of its rows that train.finetune records beside it (`tables.rows_record`), where
# both runs record one: the same file by another path (relative or absolute, a copy) holds the same rows; a checkpoint
# from before it was recorded (--train's, or --imdb's): its path as spelled, so that its own path resumes it
ROWS_RECORDED = {"train": "train_sha256", "imdb": "imdb_sha256"}


def held_out_rows_differ(path: Path, state: dict, options: dict) -> str | None:
    """Why the checkpoint `path` (its trainer state `state`) cannot be resumed by a command of these `options` (its
    recorded ones): the options of HELD_OUT_OPTIONS that differ, in a line naming them with the checkpointed run's
    values and this command's; None when none does (or the run is not a fine-tuning's)."""
    before = {**UNRECORDED_HELD_OUT, **state["args"]}

    def in_use(names) -> bool:
        return not names or any(before.get(name) or options.get(name) for name in names)

    def by_rows(name) -> str | None:  # the digest field it is compared by, where both runs record one
        digest = ROWS_RECORDED.get(name)
        return digest if digest and before.get(digest) and options.get(digest) else None

    def differs(name) -> bool:
        compared = by_rows(name) or name
        return before[compared] != options[compared]

    def said(name) -> str:
        old, new = (_value_said(run[name]) for run in (before, options))
        rows = ", other rows" if by_rows(name) else ""
        return f"{HELD_OUT_OPTIONS[name][0]} {old} (this command: {new}{rows})"

    differ = [name for name, (_, used_with) in HELD_OUT_OPTIONS.items()
              if name in options and name in before and differs(name) and in_use(used_with)]
    if not differ:
        return None
    named = ", ".join(HELD_OUT_OPTIONS[name][0] for name in differ)
    return (f"{path} was trained with other rows of its training file held out: the checkpointed run's "
            f"{', '.join(map(said, differ))}; resumed with this command's values, the run could train on rows it "
            f"scores as held out: resume with the run's own options ({named}), or choose another --out for a new run")


def _value_said(value) -> str:
    """An option's value as a resume's refusal shows it: a flag given or not, else the value as Python writes it."""
    if isinstance(value, bool):
        return "given" if value else "not given"
    return repr(value)


def recorded_order_scheme(state: dict) -> int:
    """The `train.trainer.length_grouped` scheme of the epoch a checkpoint's trainer `state` stopped in; a checkpoint
    from before it was recorded: 2 if it holds warmup_paused_s (saved from the change to 2 on), else 1."""
    return int(state.get("batch_order_scheme", 2 if "warmup_paused_s" in state else 1))


def model_architecture(model: torch.nn.Module) -> dict:
    """The config fields of ARCHITECTURE_OPTIONS that `model` has (none for a model without a config)."""
    config = getattr(model, "config", None)
    return {name: getattr(config, name) for name in ARCHITECTURE_OPTIONS if hasattr(config, name)}


def architecture_differs(path: Path, state: dict, model: torch.nn.Module, options: dict) -> str | None:
    """Why the checkpoint `path` (its trainer state `state`) does not fit `model` although its weights load: the
    config fields that differ (`ARCHITECTURE_OPTIONS`), in does_not_fit's words; None when they agree. A state from
    before they were kept: the --heads option of its run and of this command (`options`), when they differ."""
    how = "resume with the run's own model options"
    if "architecture" not in state:
        theirs, mine = state["args"].get("heads"), options.get("heads")
        if "heads" not in options or theirs == mine:
            return None
        return (f"{path} does not fit this model: the checkpointed run was started with --heads "
                f"{'not given' if theirs is None else theirs} (this command: {mine}); {how} (--heads)")
    mine = model_architecture(model)
    differ = [(name, old, mine[name]) for name, old in state["architecture"].items()
              if name in mine and mine[name] != old]
    if not differ:
        return None
    shown = ", ".join(f"{name} {old} (this command: {new})" for name, old, new in differ)
    return f"{path} does not fit this model: the checkpointed run's has {shown}; {how} " \
        f"({', '.join(ARCHITECTURE_OPTIONS[name] for name, _, _ in differ)})"


def model_shape(weights: dict, pad_token_id: int = 1) -> dict:
    """What the shapes of a state dict say of its model: its kind (masked LM, classifier) and the config fields
    that size its weights (`SHAPE_OPTIONS`; the attention heads do not show in them)."""
    def first(suffix):
        return next((v for k, v in weights.items() if k.endswith(suffix)), None)

    shape = {"kind": next((kind for prefix, kind in MODEL_KINDS if any(k.startswith(prefix) for k in weights)),
                          "encoder")}
    if (words := first("word_embeddings.weight")) is not None:
        shape.update(vocab_size=words.shape[0], hidden_size=words.shape[1])
    shape["layers"] = len({k.split("encoder.layer.")[1].split(".")[0] for k in weights if "encoder.layer." in k})
    if (inner := first("layer.0.intermediate.dense.weight")) is not None:
        shape["intermediate_size"] = inner.shape[0]
    if (positions := first("position_embeddings.weight")) is not None:
        shape["max_length"] = positions.shape[0] - pad_token_id - 1
    if (labels := first("classifier.out_proj.weight")) is not None:
        shape["labels"] = labels.shape[0]
    return shape


def does_not_fit(path: Path, weights: dict, model: torch.nn.Module, err: Exception) -> str:
    """Why the checkpoint `path` does not load into `model`, in a line or two: the config fields that differ (the
    checkpointed run's, then this command's), and the options that go on. Not `err`'s text alone: load_state_dict
    lists every mismatched weight, kilobytes of it, and names no option."""
    pad = getattr(getattr(model, "config", None), "pad_token_id", 1)
    theirs, mine = model_shape(weights, pad), model_shape(model.state_dict(), pad)
    if theirs["kind"] != mine["kind"]:
        return (f"{path} holds the checkpoint of a {theirs['kind']}, and this command trains a {mine['kind']}: resume "
                "a run with the command that started it, or choose another --out")
    differ = [(name, theirs.get(name), mine.get(name)) for name in SHAPE_OPTIONS if theirs.get(name) != mine.get(name)]
    if not differ:  # something the shapes do not tell
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return f"{path} does not fit this model (were the model options changed?): {detail[:300]}"
    shown = ", ".join(f"{name} {old} (this command: {new})" for name, old, new in differ)
    options = sorted({SHAPE_OPTIONS[name] for name, _, _ in differ} - {"the tokenizer's vocabulary"})
    how = f"resume with the run's own model options ({', '.join(options)})" if options else \
        "resume with the run's own tokenizer"
    if "max_length" in {name for name, _, _ in differ}:  # a run started before --max-length stopped setting it
        length = theirs["max_length"]
        how += (f"; the checkpoint's model takes {length} tokens: add --model-max-length {length} (a run started "
                "before train.arguments set it with --max-length)")
    return f"{path} does not fit this model: the checkpointed run's has {shown}; {how}"
