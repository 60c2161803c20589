"""Upload a trained model folder to the Hugging Face Hub.

    python -m train.push runs/mini --repo-id USER/roberta-mini [--private] [--token hf_...]
    python -m train.push runs/mini --repo-id USER/roberta-mini --dry-run   # the files and sizes; no request
    python -m train.push runs/sst2 --repo-id USER/roberta-mini-sst2 --base-model USER/roberta-mini   # fine-tuned from

The folder must hold config.json, model.safetensors, tokenizer.json, tokenizer_config.json (without it
`transformers` reads tokenizer.json as a RobertaTokenizer, without the normalizer a lower-casing classifier
relies on; `train.export` writes it) and README.md (the model card, see `train.model_card`; uploaded with its
usage naming the repo id). It must load, strictly, with `roberta` (the model config.json names, with its
tokenizer), and must not be a partial model (the last checkpoint of an unfinished run, exported by
`train.export`: its metrics.json says `partial`; `train.export` and `scripts.release` refuse it too); a
metrics.json must read, the card is written for the repo id, and every file it links (its figures) is in the
upload. All of this is checked before any request. Checkpoints (`checkpoint*/`) and pickle files (PICKLE_PATTERNS:
optimizer states, a Trainer's `training_args.bin`, a `pytorch_model.bin`) are not uploaded; the pickles left out
are named. The token defaults to the one saved by `hf auth login` or the HF_TOKEN variable. Offline (no network,
or HF_HUB_OFFLINE=1, which `huggingface_hub` honours itself), the command stops at the first request with "cannot
reach the Hugging Face Hub" and exit code 2, as every user error (`train.runtime`).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .runtime import exit_code, report_user_error, shown_command

TOKENIZER_CONFIG = "tokenizer_config.json"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", TOKENIZER_CONFIG, "README.md")
# pickle files (torch.save, pickle, joblib): loading one can run code, and the Hub flags a repo holding one; never
# uploaded, here or by scripts.deploy_space (the weights go up as model.safetensors)
PICKLE_PATTERNS = ["*.pt", "*.pth", "*.ckpt", "*.bin", "*.pkl", "*.pickle", "*.joblib"]
CHECKPOINT_PATTERNS, HIDDEN_PATTERNS = ["checkpoint*", "checkpoint*/**"], ["__pycache__/**", ".*", "**/.*"]
IGNORE_PATTERNS = CHECKPOINT_PATTERNS + PICKLE_PATTERNS + HIDDEN_PATTERNS
# what upload_folder sends of the folder: the card goes up on its own, its usage written for the repo id
FOLDER_IGNORE = IGNORE_PATTERNS + ["README.md"]


class PushError(Exception):
    """A push that cannot be done; the message says why."""


def check_folder(folder) -> Path:
    folder = Path(folder)
    if not folder.is_dir():
        raise PushError(f"{folder} is not a folder")
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        export = shown_command(["python", "-m", "train.export", folder, "NEW_FOLDER"])
        how = (f"; `{export}` writes {TOKENIZER_CONFIG} (without it transformers "
               "reads tokenizer.json as a RobertaTokenizer, dropping its normalizer)" if TOKENIZER_CONFIG in missing
               else "")
        raise PushError(f"{folder} lacks {', '.join(missing)} (a model folder needs {', '.join(REQUIRED_FILES)}){how}")
    from .export import partial_note

    if note := partial_note(folder):  # its files pass the other checks
        raise PushError(f"{folder} is a partial model, not one to ship: {note}")
    check_loads(folder)
    check_metrics(folder)
    return folder


def check_metrics(folder: Path) -> None:
    """folder/metrics.json, when there is one, must read, checked before anything is uploaded: the card's
    model-index is taken from it (`card_for`), and a corrupt one found later would stop the push after the upload,
    leaving the repo with the corrupt file and no model card."""
    from roberta.run_metrics import RunMetrics

    try:
        RunMetrics.read(folder, missing_ok=True)
    except (OSError, ValueError) as err:
        raise PushError(f"{folder} is not uploaded: {err}") from None


def model_card(folder: Path, repo_id: str, base_model: str | None = None) -> str:
    """The card uploaded with `folder` (`card_for`; `base_model`: the Hub id it was fine-tuned from), written before
    any request: one that cannot be written (an unreadable README.md or metrics.json) is a PushError, never a push
    that stops after the upload."""
    from .model_card import BaseModelRefused, card_for

    try:
        return card_for(folder, repo_id, base_model)
    except BaseModelRefused as err:
        raise PushError(str(err)) from None
    except (OSError, ValueError) as err:
        raise PushError(f"{folder}: its model card cannot be written, so nothing is uploaded: {err}") from None


def check_loads(folder: Path) -> None:
    """Load `folder` strictly, as its users will: the model config.json names with its weights, its tokenizer (and
    that the two belong together: `roberta.pipeline`), and tokenizer_config.json. A file that only existed (garbage
    weights) was uploaded."""
    import roberta

    try:
        task = roberta.checkpoint.task_of(roberta.checkpoint.read_architecture(folder))
        roberta.pipeline(task, model=folder, device="cpu")
        roberta.checkpoint.read_json(folder / TOKENIZER_CONFIG)
    except (OSError, ValueError) as err:  # ModelLoadError is a ValueError
        raise PushError(f"{folder} does not load, so it is not uploaded: {err}") from None


def upload_files(folder, allow_patterns=None, ignore_patterns=None) -> list[Path]:
    """The files of `folder` (relative paths) that `upload_folder` sends with these patterns."""
    from huggingface_hub.utils import filter_repo_objects

    paths = sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*") if p.is_file())
    return [Path(p) for p in filter_repo_objects(paths, allow_patterns=allow_patterns, ignore_patterns=ignore_patterns)]


def pickles(folder, allow_patterns=None, ignore_patterns=None) -> list[Path]:
    """The pickle files (PICKLE_PATTERNS) among `upload_files(folder, allow_patterns, ignore_patterns)`: what an
    upload leaves out, to name."""
    from huggingface_hub.utils import filter_repo_objects

    files = [p.as_posix() for p in upload_files(folder, allow_patterns, ignore_patterns)]
    return [Path(p) for p in filter_repo_objects(files, allow_patterns=PICKLE_PATTERNS)]


def pickles_note(paths) -> str:
    """The line that names the pickle files an upload left out; '' when it left out none."""
    if not paths:
        return ""
    return (f"note: not uploaded: {', '.join(Path(p).as_posix() for p in paths)} (pickle files, never uploaded: "
            "loading one can run code; the weights go up as model.safetensors)")


def check_card_links(folder: Path, card: str) -> None:
    """Every file the card links (its figures, relative links) must be in the upload: one missing (deleted, or a
    pickle, which is never uploaded) is a broken image on the Hub."""
    from .model_card import linked_files

    uploaded = {p.as_posix() for p in upload_files(folder, ignore_patterns=FOLDER_IGNORE)} | {"README.md"}
    folders = {parent.as_posix() for p in uploaded for parent in Path(p).parents}
    missing = [path for path in linked_files(card) if path not in uploaded and path not in folders]
    if missing:
        raise PushError(f"{folder} is not uploaded: its model card links {', '.join(missing)}, which the upload "
                        "lacks (a missing file, or a pickle, never uploaded): put the file in the folder, or take "
                        "its link out of README.md")


def checked_card(folder: Path, repo_id: str, base_model: str | None) -> str:
    """The card `folder` is uploaded with (`model_card`), once every file it links is in the upload."""
    card = model_card(folder, repo_id, base_model)
    check_card_links(folder, card)
    return card


def dry_run(folder, repo_id: str, base_model: str | None = None) -> list[tuple[str, int]]:
    """What `push_folder` would upload, checked as it checks it, without a request: (path, bytes) of each file,
    the model card as it would be written for `repo_id`."""
    folder = check_folder(folder)
    check_repo_id(repo_id)
    check_base_model(base_model)
    card = checked_card(folder, repo_id, base_model)
    files = [(p.as_posix(), (folder / p).stat().st_size)
             for p in upload_files(folder, ignore_patterns=FOLDER_IGNORE)]  # as upload_folder's
    return sorted(files + [("README.md", len(card.encode("utf-8")))])


def hub_endpoint() -> str:
    from huggingface_hub import constants

    return os.environ.get("HF_ENDPOINT") or constants.ENDPOINT


def _is_network_error(err: Exception) -> bool:
    """No answer from the Hub: OfflineModeIsEnabled and socket errors are OSErrors; the HTTP client's
    connection errors (httpx or its fork, whichever `huggingface_hub` uses) are TransportErrors."""
    return isinstance(err, OSError) or any(c.__name__ == "TransportError" for c in type(err).__mro__)


def check_repo_id(repo_id: str) -> str:
    """`repo_id` if the Hub would take it as USER/NAME (huggingface_hub's own rule for the name), else a PushError."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if repo_id.count("/") != 1:
        raise PushError(f"--repo-id must look like USER/NAME, got {repo_id!r}")
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        raise PushError(f"--repo-id {repo_id!r}: USER and NAME may hold letters, digits, '-', '_' and '.', not "
                        "begin or end with '-' or '.', and hold no '--' or '..'") from None
    return repo_id


def check_base_model(base_model: str | None) -> str | None:
    """--base-model, a Hub id as the card's `base_model` must be (the Hub takes no local folder there), or None."""
    if base_model is None:
        return None
    try:
        return check_repo_id(base_model)
    except PushError as err:
        raise PushError(f"--base-model is the Hub id of the model this one was fine-tuned from: "
                        f"{str(err).removeprefix('--repo-id ')}") from None


def call_hub(repo_id: str, requests):
    """`requests()` (calls to the Hub), with a refusal or no answer turned into a PushError that says why."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return requests()
    except HfHubHTTPError as err:
        raise PushError(f"the Hub refused the upload to {repo_id}: {err} (logged in? `hf auth login` or "
                        "--token)") from err
    except Exception as err:
        if _is_network_error(err):
            raise PushError(f"cannot reach the Hugging Face Hub at {hub_endpoint()}: {err}") from err
        raise


def push_folder(folder, repo_id: str, token: str | None = None, private: bool = False,
                commit_message: str = "Upload model", base_model: str | None = None) -> str:
    """Create `repo_id` (if needed) and upload `folder` to it; returns the repo URL. `base_model`: the Hub id of the
    model `folder` was fine-tuned from, named in its card."""
    from huggingface_hub import HfApi

    folder = check_folder(folder)
    check_repo_id(repo_id)
    check_base_model(base_model)
    card = checked_card(folder, repo_id, base_model)  # before any request: a card that fails, fails before the upload
    api = HfApi(endpoint=hub_endpoint(), token=token)

    def requests():
        url = api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="model",
                          commit_message=commit_message,
                          ignore_patterns=list(FOLDER_IGNORE))  # a copy: upload_folder extends the list it is given
        api.upload_file(path_or_fileobj=card.encode("utf-8"), path_in_repo="README.md",
                        repo_id=repo_id, repo_type="model", commit_message=f"{commit_message}: model card")
        return url

    return str(call_hub(repo_id, requests))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m train.push", description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help=f"model folder ({', '.join(REQUIRED_FILES)})")
    p.add_argument("--repo-id", required=True, help="USER/NAME on the Hub")
    p.add_argument("--private", action="store_true", help="create the repo private")
    p.add_argument("--token", default=None, help="Hub token (default: HF_TOKEN or the saved login)")
    p.add_argument("--message", default="Upload model", help="commit message")
    p.add_argument("--base-model", default=None, metavar="USER/NAME",
                   help="the Hub id of the model this one was fine-tuned from: the card's base_model and its Base "
                        "model section (default: the card's own, if any)")
    p.add_argument("--dry-run", action="store_true", help="check the folder and list the files and their sizes; "
                                                          "upload nothing (no request)")
    args = p.parse_args(argv)
    try:
        # the pickles left out, named (those of checkpoint folders aside: those folders are left out whole)
        left_out = pickles_note(pickles(args.folder, ignore_patterns=CHECKPOINT_PATTERNS + HIDDEN_PATTERNS))
        if args.dry_run:
            files = dry_run(args.folder, args.repo_id, args.base_model)
            if left_out:
                print(left_out, file=sys.stderr)
            for path, size in files:
                print(f"{size:>14,} bytes  {path}")
            total = sum(size for _, size in files)
            print(f"{len(files)} files, {total / 2**20:.1f} MiB -> {hub_endpoint()}/{args.repo_id} (dry run: nothing "
                  "uploaded)")
            return 0
        url = push_folder(args.folder, args.repo_id, token=args.token, private=args.private,
                          commit_message=args.message, base_model=args.base_model)
    except (PushError, OSError, ValueError) as err:  # a folder's file that cannot be read: one line, as any user error
        return report_user_error(err)
    if left_out:
        print(left_out, file=sys.stderr)
    print(f"pushed {args.folder} -> {url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
