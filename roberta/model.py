"""RoBERTa written from scratch (Liu et al. 2019): modules and heads, weight-compatible with `transformers`.

Module and parameter names follow Hugging Face's `modeling_roberta.py`, so the tensors of the two map one to
one, with three differences that `roberta.checkpoint` handles when it reads or writes a checkpoint: RoBERTa has
no segments, so we keep no token-type embedding (on load `transformers`' single row is added into our position
table; on save an all-zero one is written, which `transformers` expects); `transformers`' tied copy of the word
embeddings as the MLM decoder (`lm_head.decoder.*`) is not kept; tensors we do not use (the pooler, the
position-id buffers) are dropped. Finding the files (a folder or the Hub): `roberta.hub`; reading, checking and
writing them: `roberta.checkpoint`; building a model from them: `roberta.loading`; the checks of a forward pass's
inputs, the attention mask and the output object: `roberta.inputs`; the masked-only training loss: `roberta.loss`.

Shapes: B batch, T sequence length, H hidden size, nh heads, hd head size, V vocabulary, N labelled tokens.
"""
import math
import os
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from huggingface_hub import PyTorchModelHubMixin

from . import checkpoint, hub, loading
from .config import RobertaConfig
from .inputs import (ModelOutput, attention_keep_mask, check_inputs, check_labels, check_position_ids, check_positions,
                     check_targets, check_token_ids, head_output)
from .loss import IGNORE_INDEX, masked_lm_loss


def position_ids_from_input_ids(input_ids: torch.Tensor, pad_token_id: int) -> torch.Tensor:
    """RoBERTa's positions: count from pad_token_id + 1 over real tokens; padding gets pad_token_id."""
    not_pad = input_ids.ne(pad_token_id).long()  # (B, T)
    return torch.cumsum(not_pad, dim=1) * not_pad + pad_token_id  # (B, T)


class RobertaEmbeddings(nn.Module):
    """Token embeddings + learned position embeddings, then LayerNorm and dropout; no token-type (segment) term.
    RoBERTa counts positions from pad_token_id + 1 (padding sits at position pad_token_id), so 512 tokens need
    514 rows."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.pad_token_id = config.pad_token_id
        # padding_idx: the <pad> rows start at zero and the lookup never updates them; the word table's row still
        # trains, as the MLM decoder tied to it (RobertaForMaskedLM) gives every row a gradient
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(
            config.max_position_embeddings, config.hidden_size, padding_idx=config.pad_token_id
        )
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids=None, position_ids=None, inputs_embeds=None):
        """(B, T, H) from `input_ids` (B, T) or `inputs_embeds` (B, T, H); positions from `position_ids`, else
        counted over the non-padding tokens. ValueError for a sequence longer than max_length, or an id outside the
        vocabulary."""
        if inputs_embeds is None:
            check_token_ids(input_ids, self.word_embeddings.num_embeddings)
            inputs_embeds = self.word_embeddings(input_ids)  # (B, T, H)
        B, T, _ = inputs_embeds.shape
        given = position_ids is not None
        if given:
            check_position_ids(position_ids, (B, T))
        if position_ids is None and input_ids is not None:
            position_ids = position_ids_from_input_ids(input_ids, self.pad_token_id)  # (B, T)
        elif position_ids is None:  # only embeddings given: no padding to see, count on from pad_token_id + 1
            position_ids = torch.arange(self.pad_token_id + 1, self.pad_token_id + 1 + T,
                                        device=inputs_embeds.device).expand(B, T)  # (B, T)
        check_positions(position_ids, T, given, self.position_embeddings.num_embeddings, self.pad_token_id)
        x = inputs_embeds + self.position_embeddings(position_ids)  # (B, T, H)
        return self.dropout(self.LayerNorm(x))  # (B, T, H)


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
        """x (B, T, H) -> (context (B, T, H), attention probabilities (B, nh, T, T) or None). `keep_mask`: boolean,
        True where a query may attend to a key, broadcastable to (B, nh, T, T); None: every position."""
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
                scores = scores.masked_fill(~keep_mask, torch.finfo(scores.dtype).min)  # (B, nh, T, T)
            probs = scores.softmax(dim=-1)  # (B, nh, T, T)
            context = F.dropout(probs, dropout_p, self.training).to(v.dtype) @ v  # (B, nh, T, hd)
        else:
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=keep_mask,
                                                     dropout_p=dropout_p)  # (B, nh, T, hd)
        # (B, nh, T, hd) -> (B, T, H): the heads side by side again
        return context.transpose(1, 2).reshape(B, T, H), (probs if output_attentions else None)


class RobertaSelfOutput(nn.Module):
    """Projection, dropout, residual, LayerNorm (post-norm)."""

    def __init__(self, config: RobertaConfig, in_size: int):
        super().__init__()
        self.dense = nn.Linear(in_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)  # (B, T, H)


class RobertaOutput(RobertaSelfOutput):
    """The feed-forward block's output, `transformers`' name for it: the same projection (from the intermediate
    size), dropout, residual and LayerNorm as the attention's."""


class RobertaAttention(nn.Module):
    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.self = RobertaSelfAttention(config)
        self.output = RobertaSelfOutput(config, config.hidden_size)

    def forward(self, x, keep_mask=None, output_attentions=False):
        context, probs = self.self(x, keep_mask, output_attentions)  # (B, T, H)
        return self.output(context, x), probs  # (B, T, H)


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
        self.output = RobertaOutput(config, config.intermediate_size)

    def forward(self, x, keep_mask=None, output_attentions=False):
        x, probs = self.attention(x, keep_mask, output_attentions)  # (B, T, H)
        return self.output(self.intermediate(x), x), probs  # (B, T, H)


class RobertaEncoder(nn.Module):
    """The stack of layers, a module only for `transformers`' parameter names (`roberta.encoder.layer.N...`);
    `RobertaModel.forward` runs the layers itself."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.layer = nn.ModuleList(RobertaLayer(config) for _ in range(config.num_hidden_layers))


class RobertaModel(nn.Module):
    """Embeddings + encoder stack; returns (last hidden states (B, T, H), attentions or None, hidden states or
    None): `output_attentions` gives one (B, nh, T, T) per layer, `output_hidden_states` the embeddings' output
    and every layer's, num_hidden_layers + 1 of (B, T, H), as in `transformers`. Unlike `transformers`'
    RobertaModel: a plain tuple in this order (attentions before hidden states), no pooler, and a `from_pretrained`
    that only says how to load it (a head class, then its `.roberta`)."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.config = config
        self.embeddings = RobertaEmbeddings(config)
        self.encoder = RobertaEncoder(config)

    @classmethod
    def from_pretrained(cls, model_id, *args, **kwargs):
        """Not here (a TypeError saying where): the encoder is loaded with a head, and is its `.roberta`."""
        raise TypeError(f"RobertaModel has no from_pretrained here: load a head class and use its encoder, "
                        f"RobertaForMaskedLM.from_pretrained({str(model_id)!r}).roberta; for a folder of "
                        f"transformers' bare RobertaModel, RobertaForSequenceClassification.from_pretrained_encoder("
                        f"{str(model_id)!r}).roberta")

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, inputs_embeds=None,
                output_attentions=False, output_hidden_states=False, token_type_ids=None):
        """`input_ids` (B, T) or `inputs_embeds` (B, T, H), not both. Without `attention_mask`, <pad> tokens of
        `input_ids` are not attended to (and every position of `inputs_embeds` is); `transformers` attends to every
        token then, so without a mask the outputs of padded rows differ from theirs (with one they agree).
        `token_type_ids`, which `transformers`' tokenizers may return: all zeros (RoBERTa's single type) or None."""
        check_inputs(input_ids, inputs_embeds, token_type_ids, self.config.hidden_size)
        if attention_mask is None and input_ids is not None:
            attention_mask = input_ids.ne(self.config.pad_token_id)  # (B, T)
        x = self.embeddings(input_ids, position_ids, inputs_embeds)  # (B, T, H)
        B, T, _ = x.shape
        # (B or 1, nh or 1, T or 1, T) booleans, or None: every key may be attended to
        keep = attention_keep_mask(attention_mask, B, T, self.config.num_attention_heads)
        attentions, hidden_states = [], [x]
        for layer in self.encoder.layer:
            x, probs = layer(x, keep, output_attentions)  # (B, T, H), (B, nh, T, T) or None
            attentions.append(probs)
            if output_hidden_states:  # else each layer's output is freed once the next has read it
                hidden_states.append(x)
        return (x, tuple(attentions) if output_attentions else None,
                tuple(hidden_states) if output_hidden_states else None)


class RobertaLMHead(nn.Module):
    """dense -> GELU -> LayerNorm -> decoder tied to the word embeddings, plus a bias."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))  # (V,)

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
        x = self.dropout(torch.tanh(self.dense(x)))  # (B, H)
        return self.out_proj(x)  # (B, num_labels)


class RobertaPreTrainedModel(
    nn.Module,
    PyTorchModelHubMixin,
    library_name="transformers",  # the folders load in transformers: the Hub shows its snippet and widget
    license="mit",
    tags=["roberta", "from-scratch", "roberta-from-scratch"],
    model_card_template=checkpoint.MODEL_CARD_TEMPLATE,
):
    """Initialisation, save/load (`save_pretrained`, `from_pretrained`, `push_to_hub`) shared by the heads."""

    architecture = "RobertaModel"
    card_head = "no head"  # what the model card says the encoder carries ({labels}: the label names)

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

    def generate_model_card(self, *args, **kwargs):
        """The README.md `save_pretrained` writes where there is none (`checkpoint.MODEL_CARD_TEMPLATE`): what this
        model is and how it loads. `save_pretrained(..., model_card_kwargs={...})` fills or replaces the fields."""
        labels = ", ".join(self.config.id2label.values())
        fields = {"architecture": self.architecture, "config": self.config,
                  "head": self.card_head.format(labels=labels),
                  "task": checkpoint.ARCHITECTURES.get(self.architecture, (None, None))[1]}
        return super().generate_model_card(*args, **{**fields, **kwargs})

    # persistence: config.json + model.safetensors, readable by transformers too (roberta.checkpoint)
    def save_pretrained(self, save_directory, *, push_to_hub=False, model_card_kwargs=None, **options):
        """The mixin's `save_pretrained`: config.json, model.safetensors, a README.md where there is none (its
        fields filled or replaced by `model_card_kwargs`), `~` read as the home folder as `from_pretrained` reads
        it. With `push_to_hub=True` the folder is pushed to the Hub too, `options` being `push_to_hub`'s (repo_id,
        token, private, commit_message, ...). Any other option is a TypeError naming it (`transformers`'
        max_shard_size and safe_serialization among them: the weights are always one safetensors file)."""
        checkpoint.check_save_kwargs(push_to_hub, options, self.push_to_hub, self.config)
        if (folder := Path(hub.local_folder(save_directory))).exists() and not folder.is_dir():
            raise NotADirectoryError(f"{folder} is a file: save_pretrained writes a folder (config.json, "
                                     "model.safetensors) there")  # was FileExistsError from os.makedirs
        return super().save_pretrained(folder, push_to_hub=push_to_hub,
                                       model_card_kwargs=model_card_kwargs, **options)

    def _save_pretrained(self, save_directory) -> None:
        checkpoint.save_model(save_directory, self.config, self.architecture, self.state_dict())

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *, config=None, map_location="cpu", strict=True,
                        **hub_kwargs):
        """A model folder written by `save_pretrained` (or by `transformers`, sharded too) or a Hub repo id, in eval
        mode. `hub_kwargs`: revision, token, cache_dir, force_download, local_files_only, hub_only (the name is a
        Hub repo id whatever the disk holds; any other name is a TypeError).
        Every file is checked before any weight is used (`roberta.checkpoint`); problems raise `roberta.ModelLoadError`
        naming the file and the field or tensor. `config`: a RobertaConfig or dict used instead of config.json.
        The model is float32, on `map_location` ("cpu", "cuda", "cuda:N" or a torch.device), as
        `PyTorchModelHubMixin` places it. `strict=False` loads what fits instead of refusing a checkpoint of the
        other head or with missing or unexpected tensors: the missing ones keep their random initialisation (a
        classifier loaded from a masked LM's folder has a random head: `from_pretrained_encoder` is the way to
        start one), and a `roberta.loading.PartialLoadWarning` lists both."""
        hub.check_hub_kwargs(hub_kwargs)  # before load_model, whose own keywords (why=, advice=) are no option here
        return loading.load_model(cls, os.fspath(pretrained_model_name_or_path), config, map_location, strict,
                                  **hub_kwargs)

    @classmethod
    def _from_pretrained(cls, *, model_id, config=None, map_location="cpu", strict=True, **hub_kwargs):
        """The mixin's loader, replaced: never its pickle path. `from_pretrained` above does not reach it; it is
        here for code that calls the `PyTorchModelHubMixin` hook directly."""
        hub.check_hub_kwargs(hub_kwargs)
        return loading.load_model(cls, model_id, config, map_location, strict, **hub_kwargs)


class RobertaForMaskedLM(RobertaPreTrainedModel, pipeline_tag=checkpoint.task_of("RobertaForMaskedLM")):
    """The encoder and the masked-language-model head (dense, GELU, LayerNorm, then the word embeddings as the
    output layer): a score for every vocabulary word at every position."""
    architecture = "RobertaForMaskedLM"
    card_head = "a masked-language-model head"

    def __init__(self, config: RobertaConfig):
        super().__init__(config)
        self.roberta = RobertaModel(config)
        self.lm_head = RobertaLMHead(config)
        self.apply(self._init_weights)

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, inputs_embeds=None, labels=None,
                output_attentions=False, masked_only=False, output_hidden_states=False, token_type_ids=None,
                return_dict=None) -> ModelOutput:
        """As `transformers`: `logits` (B, T, V); with `labels` (B, T), `loss` is the mean cross-entropy over the
        positions whose label is not -100, NaN when there is none (every label -100), as in `transformers`.
        Inputs and masks as `RobertaModel.forward` takes them; `return_dict=False`: the tuple `to_tuple()` gives.

        `masked_only=True` (the pretraining opt-in, `roberta.loss`): only those N positions are projected onto
        the vocabulary. With gradients on, the loss comes from a fused, chunked projection + cross-entropy and
        `logits` is None; without, `logits` is (N, V), in the order of `labels[labels != -100]`. With no such
        position (N = 0) the loss is 0, with zero gradients (a batch without targets adds nothing to a sum of
        losses), and `logits` (0, V) without gradients."""
        hidden, attentions, hidden_states = self.roberta(input_ids, attention_mask, position_ids, inputs_embeds,
                                                         output_attentions, output_hidden_states,
                                                         token_type_ids)  # (B, T, H)
        if labels is not None:
            check_labels(labels, hidden.shape[:2], "token ids of input_ids' shape (batch, length), -100 where "
                                                   "nothing is predicted", self.config.vocab_size, IGNORE_INDEX)
        if masked_only:
            if labels is None:
                raise ValueError("masked_only=True needs labels")
            targets = labels.ne(IGNORE_INDEX)  # (B, T)
            features = self.lm_head.transform(hidden[targets])  # (N, H)
            decoder_weight = self.roberta.embeddings.word_embeddings.weight  # (V, H), tied
            # the mean loss, and the logits (N, V) without gradients (None with them)
            loss, logits = masked_lm_loss(features, decoder_weight, self.lm_head.bias, labels[targets])
        else:
            logits = self.mlm_logits(hidden)  # (B, T, V)
            loss = None
            if labels is not None:  # logits (B*T, V) against labels (B*T,)
                loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE_INDEX)
        return head_output(ModelOutput(loss=loss, logits=logits, last_hidden_state=hidden, attentions=attentions,
                                       hidden_states=hidden_states), return_dict)

    def mlm_logits(self, hidden):
        """The MLM head on hidden states (..., H) -> logits (..., V), its decoder tied to the word embeddings (the
        logit lens applies it to every layer's output: `FillMaskPipeline.logit_lens`)."""
        return self.lm_head(hidden, self.roberta.embeddings.word_embeddings.weight)


class RobertaForSequenceClassification(RobertaPreTrainedModel,
                                       pipeline_tag=checkpoint.task_of("RobertaForSequenceClassification")):
    """The encoder and a classification head on the first token's (<s>) final hidden state: dropout, dense,
    tanh, dropout, out_proj to num_labels logits."""
    architecture = "RobertaForSequenceClassification"
    card_head = "a classifier head (labels {labels})"

    def __init__(self, config: RobertaConfig):
        super().__init__(config)
        self.roberta = RobertaModel(config)
        self.classifier = RobertaClassificationHead(config)
        self.apply(self._init_weights)

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, inputs_embeds=None, labels=None,
                output_attentions=False, output_hidden_states=False, token_type_ids=None,
                return_dict=None) -> ModelOutput:
        """As `transformers`: `logits` (B, num_labels), with `labels` the loss `classification_loss` gives. Inputs
        and masks as `RobertaModel.forward` takes them; `return_dict=False`: the tuple `to_tuple()` gives."""
        hidden, attentions, hidden_states = self.roberta(input_ids, attention_mask, position_ids, inputs_embeds,
                                                         output_attentions, output_hidden_states,
                                                         token_type_ids)  # (B, T, H)
        logits = self.classifier(hidden)  # (B, num_labels)
        loss = None if labels is None else self.classification_loss(logits, labels)
        return head_output(ModelOutput(loss=loss, logits=logits, last_hidden_state=hidden, attentions=attentions,
                                       hidden_states=hidden_states), return_dict)

    def classification_loss(self, logits, labels):
        """As `transformers`, by config.problem_type (when None: regression for one output, single-label for
        integer labels, multi-label for float ones): mean squared error on the outputs, cross-entropy on label
        ids (B,), or binary cross-entropy on 0/1 targets (B, num_labels)."""
        problem, logits = self.config.problem_type, logits.float()  # (B, num_labels)
        if not isinstance(labels, torch.Tensor):
            raise TypeError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
        if problem is None:
            problem = ("regression" if self.config.num_labels == 1 else "single_label_classification"
                       if not labels.is_floating_point() else "multi_label_classification")
        if problem == "regression":  # one output: (B,) against labels (B,) or (B, 1), as transformers squeezes both
            if self.config.num_labels == 1:
                squeezed = labels.squeeze()  # (B,) from (B,) or (B, 1), as transformers squeezes them
                if squeezed.dim() > 1 or squeezed.numel() != len(logits):  # refused, named by the shape given
                    check_targets(labels, logits.shape[:1], "one number per text, (batch,) or (batch, 1), for a "
                                                            "regression")
                return F.mse_loss(logits.view(-1), labels.float().view(-1))  # (B,) against (B,)
            check_targets(labels, logits.shape, "one number per output, (batch, num_labels), for a regression")
            return F.mse_loss(logits, labels.float())  # (B, num_labels) against (B, num_labels)
        if problem == "single_label_classification":
            if labels.dim() == 2 and labels.shape[1] == 1:  # (B, 1), read as (B,) as transformers reads it
                labels = labels.view(-1)  # (B,)
            check_labels(labels, logits.shape[:1], "one class id per text, (batch,)", self.config.num_labels,
                         IGNORE_INDEX)
            return F.cross_entropy(logits.view(-1, self.config.num_labels), labels.view(-1))  # (B, num_labels), (B,)
        guessed = (" (float labels are read as multi-label targets when config.problem_type is None, as in "
                   "transformers; class ids are integers: labels.long())" if self.config.problem_type is None else "")
        check_targets(labels, logits.shape,
                      f"0/1 targets, (batch, num_labels), for multi-label classification{guessed}")
        return F.binary_cross_entropy_with_logits(logits, labels.float())  # (B, num_labels), 0/1 targets alike

    @classmethod
    def from_pretrained_encoder(cls, model_id, id2label=None, map_location="cpu", **options):
        """Start fine-tuning: the encoder (`roberta.*`) from a pretrained checkpoint (ours, a `transformers`
        RobertaForMaskedLM or a bare RobertaModel), a fresh classifier head: a classifier checkpoint's
        calibration_temperature and problem_type are not carried over (1.0 and None unless given). `options`:
        revision, token, ... for the files, config fields (hidden_dropout_prob, classifier_dropout, num_labels, ...)
        for the new model. The model is on `map_location`, as `from_pretrained` places it."""
        if id2label is not None:
            options["id2label"] = id2label
        return loading.load_encoder(cls, model_id, map_location, **options)
