"""Grow a pretrained masked LM's feed-forward layers wider without changing what it computes (Net2WiderNet, Chen et
al. 2016, "Net2Net"), so that a larger model continues from the shipped one instead of starting from random weights.

    python -m train.grow --model assets/mini-roberta-mlm --intermediate-size 2048 --out runs/mlm-ffn2048
    python -m train.pretrain --init runs/mlm-ffn2048 --corpus ... --out runs/mlm-ffn2048-1   # then train it further

Each feed-forward unit of every layer becomes `factor` copies (--intermediate-size = factor x the model's): the
copies read the unit's input weights and bias (its row of intermediate.dense) and share its output weights (its
column of output.dense, divided by `factor`), so each layer's output is the same. Copies that stayed identical would
get identical updates for ever, so their input weights are perturbed in pairs, +d and -d (d drawn with a standard
deviation of --noise times the weights' own): a pair's mean activation, (gelu((w+d)x) + gelu((w-d)x)) / 2, differs
from gelu(wx) only in d's second order. The attention, the embeddings, the LayerNorms and the MLM head are copied
as they are. Depth cannot be grown so in a post-norm model (docs/gpu-training.md: a copied layer breaks the
stack's function), nor the hidden size while the MLM head's decoder is tied to the word embeddings.

Writes config.json, model.safetensors and the tokenizer files: what `train.pretrain --init` reads. It prints how far
the grown model's predictions moved on a few sentences (largest change in a probability at a masked word).
"""
from __future__ import annotations

import argparse
import copy

import torch

import roberta
from roberta.loading import require_architecture

from .export import staged_folder
from .paths import other_entries
from .runtime import EXIT_OK, UserError, check_writable_folder, exit_code, report_user_error

CHECK_TEXTS = ("The cat sat on the <mask>.", "Paris is the capital of <mask>.", "This movie was <mask>.",
               "He was born in <mask> in 1950.")


def widen_ffn(model: roberta.RobertaForMaskedLM, intermediate_size: int, noise: float = 0.0,
              seed: int = 0) -> roberta.RobertaForMaskedLM:
    """A copy of `model` whose feed-forward layers have `intermediate_size` units, a whole multiple of the model's,
    computing the same function (exactly with noise 0; to d's second order with noise > 0, see the module's doc)."""
    old = model.config.intermediate_size
    if intermediate_size <= old or intermediate_size % old:
        raise ValueError(f"the intermediate size must be a multiple of the model's {old} larger than it "
                         f"({2 * old}, {3 * old}, ...), got {intermediate_size}")
    if noise < 0:
        raise ValueError(f"the noise must be at least 0, got {noise}")
    factor = intermediate_size // old
    config = copy.deepcopy(model.config)
    config.intermediate_size = intermediate_size
    state = dict(model.state_dict())
    generator = torch.Generator().manual_seed(seed)
    signs = torch.tensor([1.0 if c % 2 == 0 else -1.0 for c in range(factor)])  # (factor,): +d, -d, +d', -d', ...
    signs[-1] *= factor % 2 == 0  # an odd number of copies: the last one has no partner and stays unperturbed
    for i in range(config.num_hidden_layers):
        ffn_in, ffn_out = f"roberta.encoder.layer.{i}.intermediate.dense", f"roberta.encoder.layer.{i}.output.dense"
        w_in = state[f"{ffn_in}.weight"]  # (I, H)
        pairs = torch.randn(factor // 2 + factor % 2, *w_in.shape, generator=generator)  # one draw per pair
        d = pairs.repeat_interleave(2, dim=0)[:factor] * signs[:, None, None] * noise * w_in.std()  # (factor, I, H)
        state[f"{ffn_in}.weight"] = (w_in + d).reshape(intermediate_size, -1)  # copy c of unit u: row c * I + u
        state[f"{ffn_in}.bias"] = state[f"{ffn_in}.bias"].repeat(factor)  # (factor * I,)
        state[f"{ffn_out}.weight"] = state[f"{ffn_out}.weight"].repeat(1, factor) / factor  # (H, factor * I)
    grown = type(model)(config)
    grown.load_state_dict(state)  # strict: every tensor of the grown model given, in its shape
    return grown.train(model.training)


def largest_change(before, after, tokenizer, texts=CHECK_TEXTS) -> float:
    """The largest change, over `texts`' masked words, in a word's probability from `before` to `after`."""
    mask_id = tokenizer.token_to_id("<mask>")
    changes = []
    with torch.no_grad():
        for text in texts:
            ids = torch.tensor([tokenizer.encode(text).ids])  # (1, T)
            at = ids[0] == mask_id  # (T,)
            probs = [m.eval()(ids).logits[0, at].float().softmax(-1) for m in (before, after)]  # 2 of (M, V)
            changes.append(float((probs[1] - probs[0]).abs().max()))
    return max(changes)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.grow", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--model", required=True, help="the masked-LM folder (or Hub id) to grow")
    p.add_argument("--intermediate-size", type=int, required=True,
                   help="the feed-forward width of the grown model: a multiple of the model's")
    p.add_argument("--noise", type=float, default=0.01,
                   help="the copies' perturbation, in units of each layer's input weights' std (default: "
                        "%(default)s; 0: exact copies, which training never tells apart)")
    p.add_argument("--seed", type=int, default=0, help="the perturbation's seed (default: %(default)s)")
    p.add_argument("--out", required=True, help="the new model folder")
    return p


def run(args) -> str:
    out = check_writable_folder(args.out)
    if held := other_entries(out):
        raise UserError(f"--out {args.out} is not empty ({held}): give a new folder")
    require_architecture(args.model, "RobertaForMaskedLM", "growing widens a masked LM's feed-forward layers",
                         "--model")
    model = roberta.RobertaForMaskedLM.from_pretrained(args.model).eval()
    tokenizer = roberta.load_tokenizer(args.model)
    grown = widen_ffn(model, args.intermediate_size, args.noise, args.seed)
    change = largest_change(model, grown, tokenizer)
    with staged_folder(out) as folder:  # built beside --out, then renamed: never a half-written model folder
        grown.save_pretrained(folder)
        roberta.save_tokenizer(tokenizer, folder, grown.config.max_length)
    return (f"grew {args.model}: feed-forward {model.config.intermediate_size} -> {args.intermediate_size} units "
            f"a layer, {model.num_parameters():,} -> {grown.num_parameters():,} parameters; largest change in a "
            f"masked word's probability on {len(CHECK_TEXTS)} sentences: {change:.2e}; wrote {out}")


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    try:
        print(run(args))
    except (OSError, ValueError, UserError) as err:
        return report_user_error(err)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
