"""Find a model file in a local folder or on the Hugging Face Hub."""
import os

from huggingface_hub import hf_hub_download

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
TOKENIZER_NAME = "tokenizer.json"
HUB_KWARGS = ("revision", "cache_dir", "force_download", "token", "local_files_only")


def resolve_file(model_id, filename, **hub_kwargs) -> str:
    """`filename` of a local model folder, or downloaded (and cached) from the Hub repo `model_id`."""
    model_id = os.fspath(model_id)
    if os.path.isdir(model_id):
        path = os.path.join(model_id, filename)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{model_id} has no {filename}")
        return path
    if os.path.exists(model_id) or model_id.startswith((".", "/", "~")) or model_id.count("/") > 1:
        raise FileNotFoundError(f"{model_id} is not a model folder (it should hold {CONFIG_NAME} and {WEIGHTS_NAME})")
    hub_kwargs = {k: hub_kwargs[k] for k in HUB_KWARGS if hub_kwargs.get(k) is not None}
    try:
        return hf_hub_download(repo_id=model_id, filename=filename, **hub_kwargs)
    except Exception as err:  # offline, no such repo, no such file: say which, keep the cause
        raise OSError(f"could not get {filename} of {model_id!r} from the Hugging Face Hub "
                      f"(is it meant to be a local folder? are you online?): {err}") from err
