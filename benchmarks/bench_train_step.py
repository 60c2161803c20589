r"""Benchmark: our MLM training step and inference latency against `transformers`' RobertaForMaskedLM.

Both models hold the same weights (converted), see the same batch and masks, and use the same optimizer
(AdamW); ours takes the pretraining path (`masked_only=True`: the fused masked-only loss of `roberta.loss`,
as `train.pretrain` does). Steps of the two are interleaved so that background load hits both alike.
Reports tokens/s of a full training step (forward, backward, optimizer) and single-sentence inference latency.

    python benchmarks/bench_train_step.py --vocab 32768 --dropout 0.0 --precision fp32 bf16 --steps 5 \
        --latency-runs 10   # the README table
    python benchmarks/bench_train_step.py --vocab 50265 --precision bf16 --dropout 0.0
    python benchmarks/bench_train_step.py --vocab 32768 --dropout 0.0 --precision bf16 --compile   # both compiled
    python3 benchmarks/bench_train_step.py --device cuda --vocab 32768 --dropout 0.0 --precision bf16 --batch-size 512 \
        --latency-runs 0   # the GPU recipe's step

Needs `transformers` (a test dependency).
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere
import roberta  # noqa: E402
from roberta.convert import to_transformers  # noqa: E402
from roberta.masking import DynamicMasker  # noqa: E402
from roberta.loss import enable_fast_cpu_math  # noqa: E402
from train.runtime import warn_if_bf16_is_emulated  # noqa: E402


def make_batch(vocab_size, batch_size, seq_len, seed=0, mlm_probability=0.15):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocab_size, (batch_size, seq_len), generator=g)
    ids[:, 0], ids[:, -1] = 0, 2  # <s> ... </s>
    return DynamicMasker(4, vocab_size, [0, 1, 2, 3, 4], mlm_probability=mlm_probability, seed=seed)(ids)


def train_step_fn(model, batch, precision, is_hf, compile=False, device_type="cpu"):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)
    mask = torch.ones_like(batch.input_ids)
    # the whole model, not the optimizer: one fixed batch has one target count, so nothing recompiles here;
    # train.pretrain --compile compiles only the encoder, as its target count changes every batch
    model = torch.compile(model) if compile else model

    def step():
        with torch.autocast(device_type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            if is_hf:
                loss = model(input_ids=batch.input_ids, attention_mask=mask, labels=batch.labels).loss
            else:
                loss = model(batch.input_ids, mask, labels=batch.labels, masked_only=True).loss  # as train.pretrain
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def timed(fn):
    start = time.perf_counter()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()  # a CUDA step returns before its kernels finish
    return time.perf_counter() - start


def bench_training(config, args):
    torch.manual_seed(0)
    device = torch.device(args.device)
    ours = roberta.RobertaForMaskedLM(config).train()
    hf = to_transformers(ours).train().to(device)
    ours.to(device)
    batch = make_batch(config.vocab_size, args.batch_size, args.seq_len, mlm_probability=args.mlm_probability)
    batch = type(batch)(*(t.to(device) for t in (batch.input_ids, batch.labels, batch.outcome)))
    steps = {"ours": train_step_fn(ours, batch, args.precision, False, args.compile, device.type),
             "transformers": train_step_fn(hf, batch, args.precision, True, args.compile, device.type)}
    times = {name: [] for name in steps}
    for i in range(args.warmup + args.steps):
        for name, step in steps.items():  # interleaved: load on the machine affects both
            t = timed(step)
            if i >= args.warmup:
                times[name].append(t)
    tokens = args.batch_size * args.seq_len
    return {name: tokens / statistics.median(ts) for name, ts in times.items()}


def bench_inference(config, args, text_len=16):
    torch.manual_seed(0)
    ours = roberta.RobertaForMaskedLM(config).eval()
    hf = to_transformers(ours).eval()
    ids = make_batch(config.vocab_size, 1, text_len).input_ids
    fns = {"ours": lambda: ours(ids), "transformers": lambda: hf(input_ids=ids)}
    times = {name: [] for name in fns}
    with torch.inference_mode():
        for i in range(5 + args.latency_runs):
            for name, fn in fns.items():
                t = timed(fn)
                if i >= 5:
                    times[name].append(t)
    return {name: 1000 * statistics.median(ts) for name, ts in times.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="mini")
    p.add_argument("--vocab", type=int, nargs="+", default=[50265, 16384])
    p.add_argument("--dropout", type=float, nargs="+", default=[0.1, 0.0],
                   help="hidden and attention dropout (0.1 = the mini preset; 0.0 = our pretraining recipe)")
    p.add_argument("--precision", choices=["fp32", "bf16"], nargs="+", default=["fp32", "bf16"])
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--mlm-probability", type=float, default=0.15, help="share of tokens masked (default: 0.15)")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--latency-runs", type=int, default=30, help="single-sentence inference runs, 0 = skip")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="cpu",
                   help="cpu or cuda (default: cpu; inference latency is measured on the CPU)")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile both models for training (compilation happens in the warm-up steps)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    enable_fast_cpu_math()
    if "bf16" in args.precision:
        warn_if_bf16_is_emulated("bf16", torch.device(args.device))
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.get_num_threads()} threads, "
          f"batch {args.batch_size} x {args.seq_len} tokens, median of {args.steps} steps after {args.warmup} warm-up"
          f"{', both models torch.compile-d' if args.compile else ''}\n")
    print("| config | vocab | dropout | precision | ours (tokens/s) | transformers (tokens/s) | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for vocab in args.vocab:
        for dropout in args.dropout:
            for precision in args.precision:
                config = roberta.RobertaConfig.from_preset(
                    args.preset, vocab_size=vocab, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
                r = bench_training(config, argparse.Namespace(**{**vars(args), "precision": precision}))
                print(f"| {args.preset} | {vocab} | {dropout} | {precision} | {r['ours']:,.0f} | "
                      f"{r['transformers']:,.0f} | {r['ours'] / r['transformers']:.2f}x |", flush=True)
    if not args.latency_runs:
        return
    print("\n| config | vocab | ours latency (ms) | transformers latency (ms) |")
    print("|---|---|---|---|")
    for vocab in args.vocab:
        config = roberta.RobertaConfig.from_preset(args.preset, vocab_size=vocab)
        r = bench_inference(config, args)
        print(f"| {args.preset} | {vocab} | {r['ours']:.2f} | {r['transformers']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
