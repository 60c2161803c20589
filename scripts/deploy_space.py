"""Publish the app as a Hugging Face Space (Gradio SDK) with the shipped models.

    python -m scripts.deploy_space --repo-id USER/roberta-from-scratch --dry-run   # what would go up, and its size
    python -m scripts.deploy_space --repo-id USER/roberta-from-scratch [--private] [--token hf_...]

Uploads what `python app.py` needs and nothing else (SPACE_FILES: the app, the `demo` and `roberta`
packages, `assets/` with the models, `requirements.txt`, LICENSE, and README.md, whose front matter
configures the Space) with `huggingface_hub`: `create_repo(repo_type="space", space_sdk="gradio")`, then
`upload_folder` with these patterns. The token defaults to `hf auth login`'s or HF_TOKEN. Offline, or when the
Hub refuses, exit code 2 with a message that says which (`train.push.call_hub`).
"""
from __future__ import annotations

from pathlib import Path

from train.arguments import script_parser
from train.push import PushError, call_hub, check_repo_id, hub_endpoint, upload_files
from train.runtime import exit_code, report_user_error

ROOT = Path(__file__).resolve().parent.parent
SPACE_FILES = ["app.py", "README.md", "LICENSE", "requirements.txt", "demo/**", "roberta/**", "assets/**"]
SPACE_IGNORE = ["**/__pycache__/**", "*.pyc", "*.pyi", "**/.*"]  # .pyi: the stubs Gradio writes beside its components


def space_files(root=ROOT) -> list[Path]:
    """The files of `root` the Space gets: the same patterns `upload_folder` is given."""
    return upload_files(root, SPACE_FILES, SPACE_IGNORE)


def deploy(repo_id: str, root=ROOT, token: str | None = None, private: bool = False,
           commit_message: str = "Update the app") -> str:
    """Create the Space (if needed) and upload the app to it; returns its URL."""
    from huggingface_hub import HfApi

    check_repo_id(repo_id)
    if not (Path(root) / "app.py").is_file():
        raise PushError(f"{root} has no app.py: run from the project's root")
    api = HfApi(endpoint=hub_endpoint(), token=token)

    def requests():
        url = api.create_repo(repo_id, private=private, exist_ok=True, repo_type="space", space_sdk="gradio")
        api.upload_folder(folder_path=str(root), repo_id=repo_id, repo_type="space", commit_message=commit_message,
                          allow_patterns=SPACE_FILES, ignore_patterns=SPACE_IGNORE)
        return url

    return str(call_hub(repo_id, requests))


def main(argv=None) -> int:
    p = script_parser("scripts.deploy_space", __doc__)  # the docstring's summary above the options, once
    p.add_argument("--repo-id", required=True, help="USER/NAME of the Space")
    p.add_argument("--private", action="store_true", help="create the Space private")
    p.add_argument("--token", default=None, help="Hub token (default: HF_TOKEN or the saved login)")
    p.add_argument("--message", default="Update the app", help="commit message")
    p.add_argument("--dry-run", action="store_true", help="list the files and their total size; upload nothing")
    args = p.parse_args(argv)
    try:
        check_repo_id(args.repo_id)  # the dry run too: it names the Space it would create
    except PushError as err:
        return report_user_error(err)
    if args.dry_run:
        files = space_files()
        for path in files:
            print(path)
        total = sum((ROOT / path).stat().st_size for path in files)
        print(f"{len(files)} files, {total / 2**20:.1f} MiB -> https://huggingface.co/spaces/{args.repo_id}")
        return 0
    try:
        url = deploy(args.repo_id, token=args.token, private=args.private, commit_message=args.message)
    except PushError as err:
        return report_user_error(err)
    print(f"deployed the app -> {url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(exit_code(main))
