"""RoBERTa from scratch: model, tokenizer, masking and pipelines, weight-compatible with `transformers`."""
from . import convert  # roberta.convert.from_transformers / to_transformers (transformers imported when called)
from .checkpoint import load_config
from .config import PRESETS, RobertaConfig
from .hub import HubRepoNotFoundError, HubUnreachableError, ModelLoadError, ModelNotFoundError
from .inputs import ModelOutput
from .loading import PartialLoadWarning
from .loss import IGNORE_INDEX
from .masking import DynamicMasker, StaticMasker, make_masker
from .model import RobertaForMaskedLM, RobertaForSequenceClassification, RobertaModel
from .pipelines import (FillMaskPipeline, TargetPieceWarning, TextClassificationPipeline, auto_model, model_class,
                        pipeline)
from .tokenizer import TokenizerFitWarning, encode, encode_windows, load_tokenizer, save_tokenizer, train_tokenizer

__all__ = [
    "PRESETS", "RobertaConfig", "load_config", "ModelLoadError", "ModelNotFoundError", "HubRepoNotFoundError",
    "HubUnreachableError", "PartialLoadWarning", "TargetPieceWarning", "TokenizerFitWarning", "IGNORE_INDEX",
    "RobertaModel", "RobertaForMaskedLM", "RobertaForSequenceClassification", "ModelOutput",
    "DynamicMasker", "StaticMasker", "make_masker", "load_tokenizer", "save_tokenizer", "train_tokenizer",
    "encode", "encode_windows", "pipeline", "FillMaskPipeline", "TextClassificationPipeline", "auto_model",
    "model_class", "convert",
]
