"""The masked-only MLM loss: the opt-in that pretraining uses (`RobertaForMaskedLM(..., masked_only=True)`).

By default `RobertaForMaskedLM` does what `transformers` does: logits at every position (B, T, V) and, with
labels, the mean cross-entropy over the labelled ones. Pretraining labels ~15% of the tokens, and at a
vocabulary of 50,265 the projection onto the vocabulary is most of a training step. Here only the N labelled
positions are projected, and with gradients on, by a fused, chunked projection + cross-entropy: the float32
logits exist one chunk of rows at a time and are turned straight into their gradient, the only (N, V) tensor
kept (in the matmul dtype): ~2 passes over an (N, V) tensor instead of ~8, and a backward pass of two plain
matmuls (README, "Performance").

Shapes: N labelled positions, H hidden size, V vocabulary, c rows per chunk.
"""
import torch
import torch.nn.functional as F

IGNORE_INDEX = -100  # the label of a position that is not a prediction target (PyTorch's default ignore_index)
CHUNK_ROWS = 128  # rows of logits per chunk of the fused loss on CPU; 128 x 50265 floats = 26 MB
# On a GPU a chunk of 128 rows is a few microseconds of work behind ~20 kernel launches, and a pretraining batch
# of 512 x 128 tokens has ~9,800 targets: 77 chunks, ~1,500 launches per step. There chunks are sized by memory.
GPU_CHUNK_BYTES = 1 << 29  # 512 MiB of float32 logits per chunk: 4,096 rows at a vocabulary of 32,768


def chunk_rows(device: torch.device, vocab_size: int) -> int:
    """Rows of logits per chunk of the fused loss: CHUNK_ROWS on CPU (cache-sized), else GPU_CHUNK_BYTES' worth."""
    if device.type == "cpu":
        return CHUNK_ROWS
    return max(CHUNK_ROWS, GPU_CHUNK_BYTES // (4 * vocab_size))


def enable_fast_cpu_math() -> bool:
    """Flush denormal floats to zero (FTZ/DAZ). Call once per training or benchmark process.

    The MLM softmax produces probabilities far below 1e-38; in float32 these are denormals, and the
    backward matmul onto the (V, H) decoder weight slows down by 10-30x on x86 CPUs when fed them
    (seconds per step at V=50265). Rounding them to zero changes nothing measurable in the loss.
    """
    return torch.set_flush_denormal(True)


class LinearCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of (x @ weight.T + bias) against targets, for training.

    The (N, V) logits are made a chunk of rows at a time and turned straight into d(loss)/d(logits) =
    softmax - one_hot, kept in the matmul dtype; the backward pass is then two plain matmuls.
    Matmuls run in `matmul_dtype` (the autocast dtype, e.g. bfloat16); the softmax is always float32.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, targets, chunk_size, matmul_dtype):
        N = x.shape[0]  # x (N, H), weight (V, H), bias (V,), targets (N,)
        x_mm, w_mm = x.to(matmul_dtype), weight.to(matmul_dtype)  # (N, H), (V, H)
        grad_logits = torch.empty(N, weight.shape[0], dtype=matmul_dtype, device=x.device)  # (N, V)
        grad_bias = torch.zeros(weight.shape[0], dtype=torch.float32, device=x.device)  # (V,)
        loss = torch.zeros((), dtype=torch.float32, device=x.device)  # summed over the chunks, then / N
        for start in range(0, N, chunk_size):
            rows = slice(start, start + chunk_size)
            logits = (x_mm[rows] @ w_mm.t()).float() + bias.float()  # (c, V)
            lse = torch.logsumexp(logits, dim=-1)  # (c,)
            tc = targets[rows]  # (c,)
            loss += (lse - logits.gather(1, tc[:, None]).squeeze(1)).sum()  # (c,) summed: a scalar
            probs = logits.sub_(lse[:, None]).exp_()  # softmax, in place (c, V)
            probs[torch.arange(len(tc), device=x.device), tc] -= 1.0  # d(loss_i)/d(logits_i)
            grad_bias += probs.sum(0)  # (V,)
            grad_logits[rows] = probs
        n = max(N, 1)  # no target: a loss of 0 (and zero gradients), not NaN
        ctx.save_for_backward(x_mm, w_mm, grad_logits, grad_bias)
        ctx.dtypes, ctx.n = (x.dtype, weight.dtype, bias.dtype), n
        return loss / n

    @staticmethod
    def backward(ctx, grad_loss):
        x_mm, w_mm, grad_logits, grad_bias = ctx.saved_tensors
        x_dtype, w_dtype, b_dtype = ctx.dtypes
        scale = grad_loss / ctx.n  # applied to the small (N, H) operands, not the (V, H) results
        grad_x = (grad_logits @ w_mm).to(x_dtype) * scale  # (N, H)
        grad_w = (grad_logits.t() @ (x_mm * scale.to(x_mm.dtype))).to(w_dtype)  # (V, H)
        return grad_x, grad_w, (grad_bias * scale).to(b_dtype), None, None, None


def masked_lm_loss(features, weight, bias, targets, chunk_size: int | None = None):
    """(loss, logits) of the N labelled positions: features (N, H) projected by weight (V, H) and bias (V,).

    With gradients on, the loss comes from `LinearCrossEntropy` and logits is None; without (evaluation),
    logits is (N, V) and the loss their mean cross-entropy against targets (N,). No target: a loss of 0.
    `chunk_size` rows of logits at a time (default: `chunk_rows` for the device).
    """
    if torch.is_grad_enabled():
        chunk_size = chunk_size or chunk_rows(features.device, weight.shape[0])
        device = features.device.type
        dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else torch.float32
        return LinearCrossEntropy.apply(features, weight, bias, targets, chunk_size, dtype), None
    logits = F.linear(features, weight, bias)  # (N, V)
    loss = F.cross_entropy(logits.float(), targets, reduction="sum") / max(len(targets), 1)  # a scalar
    return loss, logits
