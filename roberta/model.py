"""RoBERTa written from scratch (Liu et al. 2019), weight-compatible with `transformers`.

Module and parameter names follow Hugging Face's `modeling_roberta.py`, so a state dict moves between
the two unchanged except for one detail: RoBERTa has no segments, so we keep no token-type embedding
(a saved checkpoint carries an all-zero one that `transformers` expects; see `roberta.convert`).

Shapes: B batch, T sequence length, H hidden size, nh heads, hd head size, V vocabulary, N masked tokens.
"""
import math
import os
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from huggingface_hub import PyTorchModelHubMixin

from . import hub
from .config import RobertaConfig

IGNORE_INDEX = -100  # label of positions that are not prediction targets


@dataclass
class ModelOutput:
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None  # (B, T, H)
    attentions: tuple[torch.Tensor, ...] | None = None  # one (B, nh, T, T) per layer


def enable_fast_cpu_math() -> bool:
    """Flush denormal floats to zero (FTZ/DAZ). Call once per training or benchmark process.

    The MLM softmax produces probabilities far below 1e-38; in float32 these are denormals, and the
    backward matmul onto the (V, H) decoder weight slows down by 10-30x on x86 CPUs when fed them
    (seconds per step at V=50265). Rounding them to zero changes nothing measurable in the loss.
    """
    return torch.set_flush_denormal(True)


def position_ids_from_input_ids(input_ids: torch.Tensor, pad_token_id: int) -> torch.Tensor:
    """RoBERTa's positions: count from pad_token_id + 1 over real tokens; padding gets pad_token_id."""
    not_pad = input_ids.ne(pad_token_id).long()  # (B, T)
    return torch.cumsum(not_pad, dim=1) * not_pad + pad_token_id


class RobertaEmbeddings(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.pad_token_id = config.pad_token_id
        self.max_length = config.max_length
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(
            config.max_position_embeddings, config.hidden_size, padding_idx=config.pad_token_id
        )
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[1] > self.max_length:
            raise ValueError(
                f"input has {input_ids.shape[1]} tokens but the model takes at most {self.max_length}; truncate it"
            )
        positions = position_ids_from_input_ids(input_ids, self.pad_token_id)  # (B, T)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions)  # (B, T, H)
        return self.dropout(self.LayerNorm(x))


class RobertaSelfAttention(nn.Module):
    """Bidirectional multi-head attention: every token sees every non-padding token."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, x, keep_mask=None, output_attentions=False):
        B, T, H = x.shape
        # (B, T, H) -> (B, nh, T, hd)
        q, k, v = (proj(x).view(B, T, self.num_heads, self.head_size).transpose(1, 2)
                   for proj in (self.query, self.key, self.value))
        dropout_p = self.dropout_p if self.training else 0.0
        # On CPU under bfloat16 autocast, plain matmuls beat the fused kernel: ~1.5x per training step on a
        # Xeon with AMX; forward + backward of the attention alone 3.9x on an AMD EPYC with AVX512-BF16
        # (B=32, nh=8, T=64, hd=32: 7.8 vs 30 ms). Elsewhere the fused kernel wins. The explicit path also
        # returns the probabilities.
        explicit = output_attentions or (q.device.type == "cpu" and q.dtype == torch.bfloat16)
        probs = None
        if explicit:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)  # (B, nh, T, T)
            if keep_mask is not None:
                scores = scores.masked_fill(~keep_mask, torch.finfo(scores.dtype).min)
            probs = scores.softmax(dim=-1)  # (B, nh, T, T)
            context = F.dropout(probs, dropout_p, self.training).to(v.dtype) @ v  # (B, nh, T, hd)
        else:
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=keep_mask, dropout_p=dropout_p)
        return context.transpose(1, 2).reshape(B, T, H), (probs if output_attentions else None)


class RobertaSelfOutput(nn.Module):
    """Projection, dropout, residual, LayerNorm (post-norm)."""

    def __init__(self, config: RobertaConfig, in_size: int):
        super().__init__()
        self.dense = nn.Linear(in_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class RobertaAttention(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.self = RobertaSelfAttention(config)
        self.output = RobertaSelfOutput(config, config.hidden_size)

    def forward(self, x, keep_mask=None, output_attentions=False):
        context, probs = self.self(x, keep_mask, output_attentions)
        return self.output(context, x), probs


class RobertaIntermediate(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)

    def forward(self, x):
        return F.gelu(self.dense(x))  # (B, T, intermediate_size)


class RobertaLayer(nn.Module):
    """Post-norm encoder block: x = LN(x + Attn(x)); x = LN(x + FFN(x))."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.attention = RobertaAttention(config)
        self.intermediate = RobertaIntermediate(config)
        self.output = RobertaSelfOutput(config, config.intermediate_size)  # HF calls it RobertaOutput

    def forward(self, x, keep_mask=None, output_attentions=False):
        x, probs = self.attention(x, keep_mask, output_attentions)
        return self.output(self.intermediate(x), x), probs


class RobertaEncoder(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.layer = nn.ModuleList(RobertaLayer(config) for _ in range(config.num_hidden_layers))


class RobertaModel(nn.Module):
    """Embeddings + encoder stack; returns the last hidden states (B, T, H) and, on request, attentions."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.config = config
        self.embeddings = RobertaEmbeddings(config)
        self.encoder = RobertaEncoder(config)

    def forward(self, input_ids, attention_mask=None, output_attentions=False):
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        # (B, 1, 1, T): True where a key may be attended to; None when nothing is padding (faster kernels)
        keep_mask = None if bool(attention_mask.all()) else attention_mask.bool()[:, None, None, :]
        x = self.embeddings(input_ids)  # (B, T, H)
        attentions = []
        for layer in self.encoder.layer:
            x, probs = layer(x, keep_mask, output_attentions)
            if output_attentions:
                attentions.append(probs)
        return x, (tuple(attentions) if output_attentions else None)


class _LinearCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of (x @ weight.T + bias) against targets, for training.

    The (N, V) logits are made a chunk of rows at a time and turned straight into d(loss)/d(logits) =
    softmax - one_hot, kept in the matmul dtype; the backward pass is then two plain matmuls. Compared
    with linear -> log_softmax -> nll_loss this makes ~2 passes over an (N, V) tensor instead of ~8.
    Matmuls run in `matmul_dtype` (bfloat16 under autocast); the softmax is always float32.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, targets, chunk_size, matmul_dtype):
        N = x.shape[0]  # x (N, H), weight (V, H), bias (V,), targets (N,)
        x_mm, w_mm = x.to(matmul_dtype), weight.to(matmul_dtype)
        grad_logits = torch.empty(N, weight.shape[0], dtype=matmul_dtype, device=x.device)  # (N, V)
        grad_bias = torch.zeros(weight.shape[0], dtype=torch.float32, device=x.device)  # (V,)
        loss = torch.zeros((), dtype=torch.float32, device=x.device)
        for start in range(0, N, chunk_size):
            rows = slice(start, start + chunk_size)
            logits = (x_mm[rows] @ w_mm.t()).float() + bias.float()  # (c, V)
            lse = torch.logsumexp(logits, dim=-1)  # (c,)
            tc = targets[rows]
            loss += (lse - logits.gather(1, tc[:, None]).squeeze(1)).sum()
            probs = logits.sub_(lse[:, None]).exp_()  # softmax, in place (c, V)
            probs[torch.arange(len(tc), device=x.device), tc] -= 1.0  # d(loss_i)/d(logits_i)
            grad_bias += probs.sum(0)
            grad_logits[rows] = probs
        n = max(N, 1)
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


class RobertaLMHead(nn.Module):
    """dense -> GELU -> LayerNorm -> decoder tied to the word embeddings, plus a bias."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def transform(self, features):
        return self.layer_norm(F.gelu(self.dense(features)))  # (..., H)

    def forward(self, features, decoder_weight):
        return F.linear(self.transform(features), decoder_weight, self.bias)  # (..., V)


class RobertaClassificationHead(nn.Module):
    """Sentence-level head on the <s> token: dropout, dense, tanh, dropout, projection."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(p)
        self.out_proj = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, hidden):
        x = self.dropout(hidden[:, 0])  # (B, H) the <s> token
        x = self.dropout(torch.tanh(self.dense(x)))
        return self.out_proj(x)  # (B, num_labels)


class RobertaPreTrainedModel(
    nn.Module,
    PyTorchModelHubMixin,
    library_name="roberta-from-scratch",
    license="mit",
    tags=["roberta", "from-scratch"],
):
    """Initialisation, save/load (`save_pretrained`, `from_pretrained`, `push_to_hub`) shared by the heads."""

    architecture = "RobertaModel"

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.config = config

    def _init_weights(self, module):  # as in transformers: N(0, 0.02), zero biases, unit LayerNorms
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=std)
            if module.padding_idx is not None:
                nn.init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, RobertaLMHead):
            nn.init.zeros_(module.bias)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # ----- persistence: config.json + model.safetensors, readable by transformers too (see roberta.hub) -----
    def _save_pretrained(self, save_directory: Path) -> None:
        hub.save_model(save_directory, self.config, self.architecture, self.state_dict())

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *, config=None, map_location="cpu", strict=True,
                        **hub_kwargs):
        """A model folder written by `save_pretrained` (or by `transformers`) or a Hub repo id. `hub_kwargs`:
        revision, token, cache_dir, force_download, local_files_only. Every file is checked before any weight is
        used (`roberta.hub`); problems raise `roberta.ModelLoadError` naming the file and the field or tensor."""
        return cls._from_pretrained(model_id=os.fspath(pretrained_model_name_or_path), config=config,
                                    map_location=map_location, strict=strict, **hub_kwargs)

    @classmethod
    def _from_pretrained(cls, *, model_id, config=None, map_location="cpu", strict=True, **hub_kwargs):
        config, config_path = _as_config(config, model_id, **hub_kwargs)
        state, metadata, weights_path = hub.load_weights(model_id, map_location, **hub_kwargs)
        hub.check_weights(state, cls.expected_shapes(config), config, metadata, weights_path, config_path,
                          cls.__name__, strict=strict)
        model = cls(config)  # built only once the weights are known to fit: no allocation from a bad config
        model.load_state_dict(state, strict=strict)
        return model.eval()

    @classmethod
    def expected_shapes(cls, config: RobertaConfig) -> dict[str, tuple]:
        """Tensor name -> shape of the model `config` describes (built on the meta device: no memory used)."""
        with torch.device("meta"):
            return {name: tuple(t.shape) for name, t in cls(config).state_dict().items()}


class RobertaForMaskedLM(RobertaPreTrainedModel, pipeline_tag="fill-mask"):
    architecture = "RobertaForMaskedLM"

    def __init__(self, config: RobertaConfig):
        super().__init__(config)
        self.roberta = RobertaModel(config)
        self.lm_head = RobertaLMHead(config)
        self.apply(self._init_weights)

    # rows of logits per chunk in the fused training loss; 128 x 50265 floats = 26 MB
    loss_chunk_size = 128

    def forward(self, input_ids, attention_mask=None, labels=None, output_attentions=False) -> ModelOutput:
        """Without labels, `logits` is (B, T, V). With labels, only the N positions whose label is not -100
        are projected onto the vocabulary: `logits` is (N, V), in the order of `labels[labels != -100]`.
        When training (train mode, gradients on) the loss comes from a fused, chunked projection +
        cross-entropy that never materialises the logits, and `logits` is None."""
        hidden, attentions = self.roberta(input_ids, attention_mask, output_attentions)  # (B, T, H)
        decoder_weight = self.roberta.embeddings.word_embeddings.weight  # (V, H), tied
        if labels is None:
            return ModelOutput(None, self.lm_head(hidden, decoder_weight), hidden, attentions)
        targets = labels.ne(IGNORE_INDEX)  # (B, T)
        features = self.lm_head.transform(hidden[targets])  # (N, H)
        if self.training and torch.is_grad_enabled():
            device = features.device.type
            dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else torch.float32
            loss = _LinearCrossEntropy.apply(features, decoder_weight, self.lm_head.bias, labels[targets],
                                             self.loss_chunk_size, dtype)
            return ModelOutput(loss, None, hidden, attentions)
        logits = F.linear(features, decoder_weight, self.lm_head.bias)  # (N, V)
        loss = F.cross_entropy(logits.float(), labels[targets])
        return ModelOutput(loss, logits, hidden, attentions)


class RobertaForSequenceClassification(RobertaPreTrainedModel, pipeline_tag="text-classification"):
    architecture = "RobertaForSequenceClassification"

    def __init__(self, config: RobertaConfig):
        super().__init__(config)
        self.roberta = RobertaModel(config)
        self.classifier = RobertaClassificationHead(config)
        self.apply(self._init_weights)

    def forward(self, input_ids, attention_mask=None, labels=None, output_attentions=False) -> ModelOutput:
        hidden, attentions = self.roberta(input_ids, attention_mask, output_attentions)  # (B, T, H)
        logits = self.classifier(hidden)  # (B, num_labels)
        loss = None if labels is None else F.cross_entropy(logits.float(), labels)
        return ModelOutput(loss, logits, hidden, attentions)

    @classmethod
    def from_pretrained_encoder(cls, model_id, id2label=None, map_location="cpu", **config_overrides):
        """Start fine-tuning: the encoder (`roberta.*`) from a pretrained checkpoint, a fresh classifier head."""
        config, config_path = _as_config(None, model_id)
        if id2label is not None:
            config_overrides["id2label"] = id2label
        for key, value in config_overrides.items():
            setattr(config, key, value)
        config.__post_init__()
        state, metadata, weights_path = hub.load_weights(model_id, map_location)
        state = {k: v for k, v in state.items() if k.startswith("roberta.")}
        encoder = {k: v for k, v in cls.expected_shapes(config).items() if k.startswith("roberta.")}
        if missing := sorted(encoder.keys() - state.keys()):
            raise hub.ModelLoadError(f"{weights_path}: the checkpoint lacks encoder weights {missing[:5]}")
        hub.check_weights(state, encoder, config, metadata, weights_path, config_path, cls.__name__, strict=False)
        model = cls(config)
        model.load_state_dict(state, strict=False)
        return model


# ----- loading helpers (the files themselves: roberta.hub) -----
load_config = hub.load_config


def load_state_dict(model_id, map_location="cpu", **hub_kwargs) -> dict[str, torch.Tensor]:
    """Our state dict from a checkpoint in `transformers`' layout (safetensors only, never pickle)."""
    return hub.load_weights(model_id, map_location, **hub_kwargs)[0]


def _as_config(config, model_id, **hub_kwargs) -> tuple[RobertaConfig, str]:
    """(config, where it came from): the folder's config.json, or one given as a RobertaConfig or a dict."""
    if isinstance(config, RobertaConfig):
        return config, "the given config"
    if config is not None:
        return hub.config_from_dict(config, "the given config"), "the given config"
    return hub.find_config(model_id, **hub_kwargs)
