"""Benchmark: this CPU's matrix-product throughput at the model's shapes, and the training step's share of it.

The roofline for a training step is what the CPU does on the step's own matrix products (fp32 and bf16):
a step cannot beat the time those products take at the measured rate. The script times the forward product of
each shape of one MLM training step, counts its two backward products (the same FLOPs) at the same rate, and the
attention products at the average rate of the others; compare the bound with `bench_train_step.py`'s measured
tokens/s (this script runs no step).

    python benchmarks/bench_matmul_roofline.py                 # mini preset, batch 32 x 128, vocab 32768
    python benchmarks/bench_matmul_roofline.py --precision fp32 bf16 --repeats 5   # the README table

Reports GFLOP/s per shape, the step's FLOPs per token, and the tokens/s bound that follows.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere
import roberta  # noqa: E402
from roberta.loss import enable_fast_cpu_math  # noqa: E402


def step_matmuls(config, tokens, masked):
    """(name, m, k, n, count) for the matrix products of one training step: each forward product
    (m x k) @ (k x n) comes with two backward products of the same FLOPs, so count = 3 per layer."""
    h, f, L = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return [
        ("qkv+out projections", tokens, h, h, 4 * 3 * L),
        ("ffn up", tokens, h, f, 3 * L),
        ("ffn down", tokens, f, h, 3 * L),
        ("mlm dense", masked, h, h, 3),
        ("mlm decoder (masked rows)", masked, h, config.vocab_size, 3),
    ]


def attention_flops(config, batch, seq):
    """Scores (seq x head_dim) @ (head_dim x seq) and weighted sum (seq x seq) @ (seq x head_dim): 2 products of
    2 * seq * seq * head_dim FLOPs per head and layer, times 3 for backward."""
    return 3 * 2 * 2 * batch * config.num_attention_heads * seq * seq \
        * (config.hidden_size // config.num_attention_heads) * config.num_hidden_layers


def gflops(m, k, n, dtype, repeats):
    a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
    for _ in range(2):
        a @ b
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * m * k * n / statistics.median(times) / 1e9


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="mini")
    p.add_argument("--vocab", type=int, default=32768)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--precision", choices=["fp32", "bf16"], nargs="+", default=["fp32", "bf16"])
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args(argv)
    enable_fast_cpu_math()
    config = roberta.RobertaConfig.from_preset(args.preset, vocab_size=args.vocab)
    tokens = args.batch_size * args.seq_len
    masked = round(0.15 * tokens)
    shapes = step_matmuls(config, tokens, masked)
    dense_flops = sum(2 * m * k * n * c for _, m, k, n, c in shapes)
    total = dense_flops + attention_flops(config, args.batch_size, args.seq_len)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, cpu capability "
          f"{torch.backends.cpu.get_cpu_capability()}; {args.preset}, vocab {args.vocab}, "
          f"batch {args.batch_size} x {args.seq_len}; {total / tokens / 1e6:.1f} MFLOP per token per step\n")
    print("| precision | product | shape (m x k x n) | GFLOP/s | share of step FLOPs |")
    print("|---|---|---|---|---|")
    for precision in args.precision:
        dtype = torch.float32 if precision == "fp32" else torch.bfloat16
        seconds = 0.0
        for name, m, k, n, count in shapes:
            rate = gflops(m, k, n, dtype, args.repeats)
            seconds += 2 * m * k * n * count / (rate * 1e9)
            print(f"| {precision} | {name} | {m} x {k} x {n} | {rate:,.1f} | "
                  f"{2 * m * k * n * count / total:.0%} |", flush=True)
        rate = dense_flops / seconds  # attention products are counted at the same average rate
        bound = tokens / (total / rate)
        print(f"| {precision} | **whole step at these rates** | | {rate / 1e9:,.1f} "
              f"| bound: **{bound:,.0f} tokens/s** |", flush=True)


if __name__ == "__main__":
    main()
