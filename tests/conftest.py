"""Shared fixtures: a tiny generated corpus, a tokenizer trained on it, and tiny saved model folders
(`scripts.tiny_models`, which the load check's --tiny shares).

Everything here is built in seconds from data the tests generate; nothing is downloaded, and the Hugging Face
cache is an empty one of the session's own (HF_HOME), in a folder of the session's own that Gradio's file cache
shares (GRADIO_TEMP_DIR).
"""
import atexit
import os
import shutil
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock, and so no sweep of stopped sessions' folders
    fcntl = None

SESSION_PREFIX = "tests-session-"  # the session's folder in the system's temporary folder: tests-session-XXXXXXXX
SESSION_LOCK = ".lock"  # in it, under the session's flock while it runs


def remove_stopped_sessions_folders() -> None:
    """Remove the folders of earlier sessions that ended without running their atexit (a SIGTERM, a SIGKILL: a CI
    cancel, a timeout): those whose .lock no process holds. The kernel lets go of a flock however its process ends,
    and a running session's .lock is held from the moment it has that name (`new_session_folder`), so a running
    session's folder is never taken, whichever process namespace it runs in."""
    if fcntl is None:
        return
    for lock in Path(tempfile.gettempdir()).glob(f"{SESSION_PREFIX}*/{SESSION_LOCK}"):
        try:
            fd = os.open(lock, os.O_RDONLY)
        except OSError:  # removed meanwhile, or another user's
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: that session runs (or this file system has no flock: kept to be safe)
            pass
        else:
            shutil.rmtree(lock.parent, ignore_errors=True)
        finally:
            os.close(fd)


def new_session_folder() -> Path:
    """A new folder for this session, removed at exit, and its .lock held until this process ends (the descriptor is
    never closed, and no child started by subprocess inherits it). The lock is taken on .lock.new, then renamed, so
    that another session's sweep never finds a free .lock in a folder that is just starting."""
    folder = Path(tempfile.mkdtemp(prefix=SESSION_PREFIX))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    if fcntl is not None:
        starting = folder / f"{SESSION_LOCK}.new"
        fd = os.open(starting, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a file system without flock: the folder stays unnamed to the sweep, and so is never swept
            os.close(fd)
        else:
            starting.rename(folder / SESSION_LOCK)
    return folder


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Several worker processes (pytest-xdist, `pytest_xdist_auto_num_workers` below) share the cores: each computes on
# its share of them, it and the processes its tests start (torch's threads spin waiting for a core otherwise: the
# suite took 10 min 58 s on 2 cores in 2 workers of 2 threads, 10 min 12 s of 1). Set before torch is imported; a
# thread count the user set is kept.
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, usable_cores() // WORKERS)))

# No test reaches the network, here or in CI (which sets this too): set before huggingface_hub is imported,
# which reads it once, so that a run here behaves as CI's does
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The session's folder. Made here, at import, and not as a fixture: huggingface_hub and Gradio read the two variables
# below once, when they are imported (by this file, or by a test file as it is collected, before any fixture runs)
remove_stopped_sessions_folders()
SESSION_FOLDER = new_session_folder()
# ... no test reads a developer's Hugging Face cache either: an empty one for the session (a cached
# FacebookAI/roberta-base would load where the tests expect "not in its download cache"). In os.environ, so the apps
# and scripts the tests start (scripts/app_process.py passes os.environ on) read the same one.
HF_HOME = SESSION_FOLDER / "hf-home"
HF_HOME.mkdir()
os.environ["HF_HOME"] = str(HF_HOME)
# ... and the files Gradio serves (plots, uploads) are cached in the session's folder, not in a shared
# $TMPDIR/gradio that outlives the run: the tests' apps, and the apps they start, alike
os.environ["GRADIO_TEMP_DIR"] = str(SESSION_FOLDER / "gradio")
for _name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_ASSETS_CACHE", "HF_XET_CACHE", "TRANSFORMERS_CACHE",
              "HF_DATASETS_CACHE", "HF_TOKEN_PATH"):
    os.environ.pop(_name, None)  # each defaults to a folder in HF_HOME
# the apps the tests start answer on loopback: never through a proxy that HTTP(S)_PROXY names (urllib, httpx and
# gradio_client follow those variables unless NO_PROXY lists the host: each app start then waited out its timeout)
for _name in ("NO_PROXY", "no_proxy"):
    os.environ[_name] = ",".join(filter(None, [os.environ.get(_name), "127.0.0.1,localhost,::1"]))

import pytest  # noqa: E402
import torch  # noqa: E402
from huggingface_hub import constants as hub_constants  # noqa: E402

import roberta  # noqa: E402
from scripts.tiny_models import make_sentences, save_tiny_model, tiny_tokenizer  # noqa: E402

if not Path(hub_constants.HF_HUB_CACHE).is_relative_to(HF_HOME):  # huggingface_hub read its paths before this
    raise pytest.UsageError(f"huggingface_hub was imported before tests/conftest.py set HF_HOME: its cache is "
                            f"{hub_constants.HF_HUB_CACHE}, not in {HF_HOME}")


FEW_FILES = 3  # a run of at most this many test files runs in one process


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pytest.ini): how many worker processes run the session. A worker a core (or as many as
    PYTEST_XDIST_AUTO_NUM_WORKERS says), each running whole files (`--dist loadfile`); none, the tests running in
    this process, when the command names at most FEW_FILES test files: a worker imports torch and builds the
    session's fixtures again, seconds that a few files do not win back. (2 workers on 2 cores: the whole suite in
    10 min 12 s rather than 15 min 7 s; 4 workers took 12 min 22 s.)"""
    if given := os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(given)
    files: set[Path] = set()
    for arg in config.args:
        path = Path(arg.split("::")[0])
        files.update(path.rglob("test_*.py") if path.is_dir() else [path])
        if len(files) > FEW_FILES:
            return usable_cores()
    return 0


def flush_denormal_is_on() -> bool:
    """Whether float denormals are flushed to zero: torch sets it (`torch.set_flush_denormal`) but has no getter,
    and a float32 denormal times one reads 0 when it is on."""
    return (torch.tensor([1e-40]) * 1).item() == 0.0


FLUSH_DENORMAL_AT_START = flush_denormal_is_on()


@pytest.fixture(autouse=True)
def flush_denormal_as_the_session_started():
    """A training run or a benchmark in this process turns flush-to-zero on for the rest of it
    (`roberta.loss.enable_fast_cpu_math`, as every training process should), in a test or in a module's fixture
    that trains (set up before this one): each test starts and ends with the setting the session started with, so
    that it computes as it does alone, whatever ran before it (a few microseconds a test)."""
    def restore():
        if flush_denormal_is_on() != FLUSH_DENORMAL_AT_START:
            torch.set_flush_denormal(FLUSH_DENORMAL_AT_START)
    restore()
    yield
    restore()


@pytest.fixture(scope="session")
def sentences() -> list[str]:
    return make_sentences(400)


@pytest.fixture(scope="session")
def tokenizer(sentences):
    return tiny_tokenizer(sentences)


@pytest.fixture(scope="session")
def tiny_config(tokenizer):
    return roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer)


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory, tokenizer):
    """A saved, randomly initialised MLM folder (config.json, model.safetensors, tokenizer.json)."""
    return save_tiny_model(tmp_path_factory.mktemp("tiny-mlm"), tokenizer)


@pytest.fixture(scope="session")
def tiny_clf_dir(tmp_path_factory, tokenizer):
    """A saved, randomly initialised sentiment classifier folder with labels negative/positive."""
    return save_tiny_model(tmp_path_factory.mktemp("tiny-clf"), tokenizer, classifier=True)


@pytest.fixture(scope="session")
def negative_clf_dir(tmp_path_factory, tiny_clf_dir):
    """The tiny classifier folder made to answer "negative" (`tiny_clf_dir`'s answers "positive" to every text):
    its out_proj bias set to (0.3, -0.3), which moves the answer and cannot move any gradient, so its words'
    pushes are the fixture's."""
    folder = shutil.copytree(tiny_clf_dir, tmp_path_factory.mktemp("negative") / "clf")
    model = roberta.RobertaForSequenceClassification.from_pretrained(folder)
    with torch.no_grad():
        model.classifier.out_proj.bias.copy_(torch.tensor([0.3, -0.3]))
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def sharp_classifier(tokenizer):
    """A classifier whose answer moves with its input (the tiny fixture's P(positive) is about 0.505 for every
    text: too flat for integrated gradients, or the order of a batch's answers, to be checked on), without
    gradients as the app loads it."""
    config = roberta.RobertaConfig.from_preset("tiny", tokenizer=tokenizer, id2label={0: "negative", 1: "positive"},
                                               initializer_range=0.3)
    torch.manual_seed(0)
    return roberta.RobertaForSequenceClassification(config).eval().requires_grad_(False)


# The real corpora (SST-2, IMDB, WikiText-2), which no test builds: in the folder SHARED_DATA names, by default
# ../shared/data beside the repository (where the training commands read them too)
SHARED_DATA = Path(os.environ.get("SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.fixture(scope="session")
def shared_file():
    """`shared_file("sst2/dev.tsv")`: that file of the real corpora (`SHARED_DATA`), or the test skipped, saying
    where it was looked for, where it is absent."""
    def need(relative: str) -> Path:
        path = SHARED_DATA / relative
        if not path.is_file():
            pytest.skip(f"{path} not present (set SHARED_DATA to the folder that holds sst2/, imdb/ and "
                        f"wikitext-2/)")
        return path
    return need


@pytest.fixture(scope="session")
def roberta_base_style_tokenizer_file(tmp_path_factory, tokenizer):
    """Our vocabulary written the way roberta-base's tokenizer.json is laid out: <s> <pad> </s> <unk> are ids
    0..3, <mask> is the *last* id (50264 in roberta-base), merges are "a b" strings, the first four added
    tokens are `normalized`, <mask> has lstrip, and the BPE model carries no "type" tag (older file format)."""
    import json

    ours = json.loads(tokenizer.to_str())
    vocab = sorted(ours["model"]["vocab"].items(), key=lambda kv: kv[1])
    regular = [token for token, _ in vocab if token not in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")]
    new_vocab = {token: i for i, token in enumerate(["<s>", "<pad>", "</s>", "<unk>", *regular, "<mask>"])}

    def added(token, **flags):
        return {"id": new_vocab[token], "special": True, "content": token, "single_word": False,
                "lstrip": False, "rstrip": False, "normalized": True, **flags}

    data = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added("<s>"), added("<pad>"), added("</s>"), added("<unk>"),
                         added("<mask>", lstrip=True, normalized=False)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                           "trim_offsets": True, "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True},
        "model": {"dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "vocab": new_vocab,
                  "merges": [" ".join(m) if isinstance(m, list) else m for m in ours["model"]["merges"]]},
    }
    path = tmp_path_factory.mktemp("roberta-base-style") / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def models(tiny_mlm_dir, tiny_clf_dir):
    """The app's models (`demo.models.load_models`) from the tiny folders."""
    from demo.models import load_models
    return load_models(tiny_mlm_dir, tiny_clf_dir)


@pytest.fixture(scope="module")
def handlers(models):
    """The app's handlers over the tiny models (`demo.handlers.Handlers`)."""
    from demo.handlers import Handlers
    return Handlers(models)


@pytest.fixture(scope="module")
def single_thread():
    """Tiny models run ~100x faster on one thread when the CPU is shared (no OpenMP spinning); restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def train_files(tmp_path_factory, sentences, tokenizer):
    """Tiny files for the training scripts: corpus.txt, valid.txt (one document per line), tokenizer.json,
    and sentiment TSVs train.tsv / dev.tsv (header sentence, label) and imdb.tsv (header text, label)."""
    folder = tmp_path_factory.mktemp("train-files")
    more = make_sentences(1200, seed=1)
    (folder / "corpus.txt").write_text("\n".join(" ".join(more[i:i + 4]) for i in range(0, 1200, 4)) + "\n")
    (folder / "valid.txt").write_text("\n".join(" ".join(sentences[i:i + 4]) for i in range(0, 120, 4)) + "\n")
    tokenizer.save(str(folder / "tokenizer.json"))

    def label(text):  # learnable: positive verbs
        return int(any(v in text for v in ("likes", "loves", "finds")))

    for name, column, rows in [("train.tsv", "sentence", more[:300]), ("dev.tsv", "sentence", sentences[:60]),
                               ("imdb.tsv", "text", sentences[60:120])]:
        (folder / name).write_text(f"{column}\tlabel\n" + "".join(f"{s}\t{label(s)}\n" for s in rows))
    return folder


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Records on the test item whether its test itself failed (`item.call_failed`), for a fixture's teardown: the
    browser test's shared page is not handed on from a failed test."""
    report = yield
    if report.when == "call":
        item.call_failed = report.failed
    return report
