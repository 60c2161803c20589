"""Copy a finished run folder as a shippable, Hub-ready model folder, optionally storing the weights in
half precision (half the size; the model still computes in float32: it is cast back when loaded).

    python -m train.export runs/mini-roberta-mlm assets/mini-roberta-mlm --dtype float16

Copies config.json, tokenizer.json, tokenizer_config.json, README.md, metrics.json, curves.png,
reliability.png (a classifier's calibration diagram), log.jsonl and phases.json (a shipped MLM's pretraining
history); never the checkpoints. Loads the result
back with `roberta` to check it before returning.
"""
import argparse
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

import roberta

FILES = ["config.json", "tokenizer.json", "tokenizer_config.json", "README.md", "metrics.json", "curves.png",
         "reliability.png", "log.jsonl", "phases.json"]
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def export(src, dst, dtype="float32") -> Path:
    src, dst = Path(src), Path(dst)
    if not (src / "model.safetensors").is_file() or not (src / "config.json").is_file():
        raise FileNotFoundError(f"{src} is not a finished model folder (config.json and model.safetensors)")
    dst.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
        else:  # left by an earlier export into this folder: it would describe another model
            (dst / name).unlink(missing_ok=True)
    weights, metadata = roberta.hub.read_weights(src / "model.safetensors")  # metadata: the config it fits
    save_file({k: v.to(DTYPES[dtype]).contiguous() for k, v in weights.items()}, dst / "model.safetensors",
              metadata={**metadata, "format": "pt", "stored_dtype": dtype})
    architecture = roberta.hub.read_architecture(dst)
    getattr(roberta, architecture).from_pretrained(dst)  # strict load: the copy is complete
    return dst


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m train.export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", help="a finished run folder (train.pretrain / train.finetune output)")
    p.add_argument("dst", help="the folder to write")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float16", help="stored weight dtype (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        dst = export(args.src, args.dst, args.dtype)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    size = (dst / "model.safetensors").stat().st_size / 1e6
    print(f"wrote {dst} (model.safetensors {size:.1f} MB, {args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
