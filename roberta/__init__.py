"""RoBERTa from scratch: model, tokenizer, masking and pipelines, weight-compatible with `transformers`."""
from .config import PRESETS, RobertaConfig
from .hub import ModelLoadError, ModelNotFoundError
from .masking import DynamicMasker, StaticMasker, make_masker
from .model import (ModelOutput, RobertaForMaskedLM, RobertaForSequenceClassification, RobertaModel, load_config)
from .pipelines import FillMaskPipeline, TextClassificationPipeline, encode, pipeline
from .tokenizer import load_tokenizer, train_tokenizer

__all__ = [
    "PRESETS", "RobertaConfig", "load_config", "ModelLoadError", "ModelNotFoundError", "RobertaModel",
    "RobertaForMaskedLM", "RobertaForSequenceClassification",
    "ModelOutput", "DynamicMasker", "StaticMasker", "make_masker", "load_tokenizer", "train_tokenizer",
    "pipeline", "FillMaskPipeline", "TextClassificationPipeline", "encode",
]
