"""AdamW with RoBERTa's settings and the learning-rate schedule (warmup, then linear or cosine decay)."""
from __future__ import annotations

import math

import torch

BETAS, EPS = (0.9, 0.98), 1e-6  # RoBERTa's Adam settings (Liu et al. 2019, table 9)


def takes_weight_decay(param: torch.Tensor) -> bool:
    """Weight decay on matrices (linear and embedding weights) only, not on biases and LayerNorm weights."""
    return param.ndim >= 2


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """Two AdamW groups: the weights that take weight decay (`takes_weight_decay`) and the rest."""
    decay, no_decay = [], []
    for _, param in model.named_parameters():
        if param.requires_grad:
            (decay if takes_weight_decay(param) else no_decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(model: torch.nn.Module, lr: float, weight_decay: float, groups=None) -> torch.optim.AdamW:
    """AdamW over `groups` (default `param_groups`); a group's optional "lr_scale" multiplies the scheduled lr.
    On a GPU the fused implementation (one kernel per step rather than a few per parameter group)."""
    params = list(model.parameters())
    on_gpu = bool(params) and all(p.is_cuda for p in params)
    return torch.optim.AdamW(groups or param_groups(model, weight_decay), lr=lr, betas=BETAS, eps=EPS,
                             fused=True if on_gpu else None)


def decay(progress: float, schedule: str = "linear") -> float:
    """From 1 at progress 0 to 0 at progress 1."""
    progress = min(max(progress, 0.0), 1.0)
    return 0.5 * (1 + math.cos(math.pi * progress)) if schedule == "cosine" else 1.0 - progress


def lr_factor(step: int, warmup: int, total: int | None, schedule: str = "linear",
              time_progress: float | None = None) -> float:
    """Multiplier of the peak lr for optimizer step `step` (1, 2, ...): linear warmup over `warmup` steps,
    then decay to 0 at step `total` (the last step still gets a small positive lr).
    Without `total` (only a time budget), the decay follows `time_progress`: the share of the time left
    after warmup that has been used, so it reaches 0 when the time is up, however fast the machine is."""
    if step <= warmup:
        return step / warmup
    if total is None:
        return 1.0 if time_progress is None else decay(time_progress, schedule)
    return decay((step - warmup - 1) / max(1, total - warmup), schedule)  # 1 right after warmup


