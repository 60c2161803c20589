"""Where a model runs: the CPU or a CUDA device of this machine, named as `torch` or `transformers` name them; and
copying a CPU tensor there without waiting for the GPU."""
import torch


def parse_device(device, name: str) -> torch.device:
    """`device` as a torch.device: a name ("cpu", "cuda", "cuda:1") or a torch.device, or as `transformers`'
    pipelines spell it, -1 for the CPU and N for CUDA device N. This package runs on the CPU or a CUDA device
    of this machine: a ValueError names the option (`name`) for anything else ("meta", "mps", "gpu"), and for a
    CUDA device this machine does not have (stricter than `transformers`, which then runs on the CPU)."""
    expected = f"{name} must be 'cpu', 'cuda', 'cuda:N', -1 (the CPU) or N (a CUDA device), got {device!r}"
    if isinstance(device, int) and not isinstance(device, bool):
        device = "cpu" if device == -1 else f"cuda:{device}"
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(expected) from None
    if parsed.type not in ("cpu", "cuda"):
        raise ValueError(f"{expected}: this package runs on the CPU or a CUDA device")
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name} {str(parsed)!r}: this machine has no CUDA device ('cpu' or -1 for the CPU)")
    if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        raise ValueError(f"{name} {str(parsed)!r}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                         f"cuda:0 to cuda:{torch.cuda.device_count() - 1}")
    return parsed


def to_device(cpu_tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A CPU tensor on `device` (pretraining's batch indices, the masker's draws); to a GPU through pinned memory,
    without waiting for the GPU (a plain copy waits for everything queued there: a host sync)."""
    if device.type != "cuda":
        return cpu_tensor.to(device)
    return cpu_tensor.pin_memory().to(device, non_blocking=True)


def map_location_device(map_location) -> torch.device:
    """`map_location` (where a loaded model ends, or `roberta.checkpoint.load_weights` reads the tensors to) as a
    device: the CPU or a CUDA device (`parse_device`); safetensors reads to no other (it would call the file
    corrupt)."""
    return parse_device(map_location, "map_location")
