"""Messages and refusals of the command-line entry points and of `roberta`'s loaders, each found by trying it:
exit status 2 and one `error: ...` line naming the option or file, checked before any work is done or anything
is overwritten. The comment of each case says what it did before."""
import socket
import time
from pathlib import Path

import pytest
import torch

import roberta
from scripts import analogy_probe, deploy_space, load_check, release, screenshots
from train import (average, checkpointing, data, evaluate, export, fill_mask_probe, finetune, gpu_transfer,
                   imdb_sample, pretrain, runtime, tapt_corpus)
from train import tokenizer as tokenizer_cli
from helpers import assert_user_error, finetune_argv, outcome, pretrain_argv

pytestmark = pytest.mark.usefixtures("single_thread")

LATIN1 = "category\tsentence\texpected\n".encode() + "caf\xe9\tThe <mask> is open.\tdoor\n".encode("latin-1")


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


# ----- 1. train.export never replaces a model of another kind -----
def test_export_refuses_a_destination_holding_another_kind_of_model(tiny_mlm_dir, tiny_clf_dir, tmp_path, capsys):
    """`train.export MLM assets/mini-roberta-sst2` exited 0: the shipped classifier's weights and config became
    the masked LM's, beside its arms.json, baseline.json and phase files."""
    shipped = tmp_path / "mini-roberta-sst2"
    assert export.main([str(tiny_clf_dir), str(shipped)]) == 0  # an export, as a release ships it
    (shipped / "arms.json").write_text("{}")
    (shipped / "baseline.json").write_text("{}")
    capsys.readouterr()
    before = snapshot(shipped)
    err = assert_user_error(export.main, [str(tiny_mlm_dir), str(shipped)], capsys,
                            f"the destination {shipped} holds a RobertaForSequenceClassification model",
                            "RobertaForMaskedLM", "choose another destination")
    assert err.count("\n") == 1
    assert snapshot(shipped) == before  # nothing overwritten, nothing removed
    # a re-export of the same kind still replaces the earlier one, and keeps the release's own files
    assert export.main([str(tiny_clf_dir), str(shipped), "--dtype", "float32"]) == 0
    assert (shipped / "arms.json").is_file() and roberta.checkpoint.read_architecture(shipped) == \
        "RobertaForSequenceClassification"
    # and the other way round: a classifier into a masked LM's folder
    mlm = tmp_path / "mini-roberta-mlm"
    assert export.main([str(tiny_mlm_dir), str(mlm)]) == 0
    before = snapshot(mlm)
    assert_user_error(export.main, [str(tiny_clf_dir), str(mlm)], capsys, "holds a RobertaForMaskedLM model")
    assert snapshot(mlm) == before


# ----- 2. scripts.screenshots checks --out and --url first -----
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_screenshots_checks_out_and_url_before_starting_a_browser(tmp_path, capsys):
    """No app at --url was a Playwright traceback (net::ERR_CONNECTION_REFUSED); --out an existing file a
    FileExistsError traceback."""
    url = f"http://127.0.0.1:{_closed_port()}/"
    err = assert_user_error(screenshots.main, ["--url", url, "--out", str(tmp_path / "ss")], capsys,
                            f"--url {url}", "no app answers there")
    assert err.count("\n") == 1 and not (tmp_path / "ss").exists()
    a_file = tmp_path / "somefile.txt"
    a_file.write_text("x")
    err = assert_user_error(screenshots.main, ["--url", url, "--out", str(a_file)], capsys,
                            f"--out {a_file} is a file, not a folder")
    assert err.count("\n") == 1 and a_file.read_text() == "x"

    err = assert_user_error(screenshots.main, ["--url", url, "--out", str(a_file / "sub")], capsys,
                            f"{a_file} is a file, not a folder")  # was a NotADirectoryError traceback


def test_screenshots_refuse_a_model_the_app_cannot_serve_and_replace_no_picture_on_failure(tmp_path, capsys,
                                                                                          monkeypatch, tiny_clf_dir):
    """A mistyped MLM_MODEL was a Playwright traceback after 48 s; a failure half-way had replaced the pictures
    taken before it (the README's main image alone)."""
    monkeypatch.setattr(screenshots, "CHROMIUM", __file__)  # any existing file: no browser is started here
    monkeypatch.setenv("MLM_MODEL", str(tmp_path / "no-such-model"))
    monkeypatch.setenv("SENTIMENT_MODEL", str(tiny_clf_dir))
    out = tmp_path / "shots"
    assert_user_error(screenshots.main, ["--out", str(out)], capsys,
                      "The fill-mask (pretrained MLM) model is not available", "does not exist")
    assert not out.exists()  # nothing written
    out.mkdir()
    old = out / "fill-mask.png"
    old.write_bytes(b"the picture before")

    def fails_half_way(url, folder, browser=None):
        (folder / "fill-mask.png").write_bytes(b"new")
        raise AssertionError("the Sentiment tab showed no example")

    monkeypatch.setattr(screenshots, "take", fails_half_way)
    monkeypatch.setattr(screenshots, "check_app_url", lambda url: None)
    code, _, err = outcome(screenshots.main, ["--url", "http://127.0.0.1:9/", "--out", str(out)], capsys)
    assert code == 1 and "error: no screenshot was written" in err and "Traceback" not in err
    assert old.read_bytes() == b"the picture before" and sorted(p.name for p in out.iterdir()) == ["fill-mask.png"]


def test_load_check_checks_its_json_file_before_the_load(tmp_path, capsys):
    """--json a folder was an IsADirectoryError traceback after the whole load had run."""
    assert_user_error(load_check.main, ["--tiny", "--json", str(tmp_path)], capsys, f"--json {tmp_path} is a folder")


@pytest.mark.slow  # starts the app
def test_load_check_names_a_model_the_app_cannot_serve_at_once(tmp_path, capsys, tiny_mlm_dir):
    """It retried for the whole --timeout (3 minutes by default), then a TimeoutError traceback."""
    err = assert_user_error(load_check.main, ["--mlm", str(tiny_mlm_dir), "--sentiment", str(tmp_path / "missing"),
                                              "--clients", "1", "--requests", "1", "--timeout", "100"], capsys,
                            "model is not available: the folder missing does not exist")
    assert "Traceback" not in err


def test_an_app_interrupted_while_it_starts_is_stopped(monkeypatch):
    """Ctrl-C (or SIGTERM, taken as Ctrl-C) during the start left app.py running without its parent."""
    import os
    import signal

    from scripts.app_process import AppProcess
    from train.exit_codes import sigterm_as_interrupt

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(AppProcess, "_wait_until_ready", interrupted)
    app = AppProcess()
    with pytest.raises(KeyboardInterrupt):
        app.start()
    assert app.proc is not None and not app.alive()
    previous = signal.getsignal(signal.SIGTERM)
    with sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt):  # what exit_code wraps every script's main in
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises at once: never slept out
    assert signal.getsignal(signal.SIGTERM) == previous

# ----- 3. a labelled file as pretraining text -----
def test_an_sst2_layout_file_keeps_every_row_as_pretraining_text(tmp_path, capsys):
    """An 872-row SST-2 file (sentence<TAB>label) lost min(1000, rows) rows, i.e. all of them, to the IMDB
    evaluation sample, which is never drawn from it: "no documents found (the file is empty or blank)"."""
    sentences = [f"sentence number {i} is here ." for i in range(872)]
    dev = tmp_path / "dev.tsv"
    dev.write_text("sentence\tlabel\n" + "".join(f"{s}\t{i % 2}\n" for i, s in enumerate(sentences)))
    documents = data.read_documents(str(dev))
    assert len(documents) == 872
    out = tmp_path / "tok"
    code, stdout, err = outcome(tokenizer_cli.main, ["--corpus", str(dev), "--eval-text", str(dev),
                                                 "--vocab-size", "300", "--min-frequency", "1", "--quiet",
                                                 "--out", str(out)], capsys)
    assert code == 0, err
    assert (out / "tokenizer.json").is_file()


def test_an_imdb_layout_file_the_sample_takes_whole_is_named(tmp_path):
    """IMDB's layout (text<TAB>label) keeps losing its evaluation sample; when that is every row, the message
    says so instead of "the file is empty or blank"."""
    small = tmp_path / "imdb.tsv"
    small.write_text("text\tlabel\n" + "".join(f"Review {i}.\t{i % 2}\n" for i in range(60)))
    with pytest.raises(data.DataError, match="the IMDB evaluation sample took every one of its 60 rows") as info:
        data.read_documents(str(small))
    assert "empty or blank" not in str(info.value)
    big = tmp_path / "imdb-big.tsv"
    texts = [f"Review {i}." for i in range(1200)]
    big.write_text("text\tlabel\n" + "".join(f"{t}\t{i % 2}\n" for i, t in enumerate(texts)))
    held_out = set(imdb_sample.imdb_sample(str(big))[0])
    assert data.read_documents(str(big)) == [t for t in texts if t not in held_out] and len(held_out) == 1000


# ----- 4. messages that name the option and the file -----
def test_a_probe_file_that_is_not_utf8_is_named(tiny_mlm_dir, tmp_path, capsys):
    """Was "error: 'utf-8' codec can't decode byte 0xe9 ..." without the file."""
    probe = tmp_path / "probe.tsv"
    probe.write_bytes(LATIN1)
    assert_user_error(fill_mask_probe.main, ["--model", str(tiny_mlm_dir), "--probe", str(probe)], capsys,
                      f"{probe} line 2: not UTF-8 text")
    analogy = tmp_path / "analogy.tsv"
    analogy.write_bytes("category\ta\tb\tc\texpected\n".encode() + "caf\xe9\ta\tb\tc\td\n".encode("latin-1"))
    assert_user_error(analogy_probe.main, ["--model", str(tiny_mlm_dir), "--probe", str(analogy)], capsys,
                      f"{analogy} line 2: not UTF-8 text")


def test_a_checks_file_that_is_not_utf8_is_named(tiny_clf_dir, tmp_path, capsys):
    """Was "error: 'utf-8' codec can't decode byte 0xe9 in position 32: invalid continuation byte"."""
    checks = tmp_path / "checks.tsv"
    checks.write_bytes("category\tsentence\texpected\n".encode() + "x\tcaf\xe9 is good\tpositive\n".encode("latin-1"))
    assert_user_error(evaluate.main, ["--model", str(tiny_clf_dir), "--checks", str(checks)], capsys,
                      f"{checks} line 2: not UTF-8 text (byte 0xe9 at column 6)")


@pytest.mark.parametrize("script, option", [(evaluate, "--labeled"), (fill_mask_probe, "--probe"),
                                            (analogy_probe, "--probe"), (tapt_corpus, "--imdb-unsup")],
                         ids=lambda value: getattr(value, "__name__", value))
def test_a_folder_given_for_a_file_is_called_a_folder(tiny_mlm_dir, tiny_clf_dir, train_files, tmp_path, capsys,
                                                      script, option):
    """Each was "FOLDER: no such file" for a folder that exists."""
    folder, out = train_files, tmp_path / "out"
    argv, message = {
        evaluate: (["--model", str(tiny_clf_dir)], f"{folder} is a folder, not a TSV/CSV file"),
        fill_mask_probe: (["--model", str(tiny_mlm_dir)], f"--probe {folder}: a folder, not a file"),
        analogy_probe: (["--model", str(tiny_mlm_dir)], f"--probe {folder}: a folder, not a file"),
        tapt_corpus: (["--out", str(out), "--sst2-train", str(train_files / "train.tsv")],
                      f"--imdb-unsup {folder}: a folder, not a file"),
    }[script]
    err = assert_user_error(script.main, [*argv, option, str(folder)], capsys, message)
    assert "no such file" not in err and not out.exists()


def test_pretrain_and_finetune_name_dropout(train_files, tiny_mlm_dir, tmp_path, capsys):
    """Was "hidden_dropout_prob must be ...", the config's field, after the tokenizer was loaded."""
    out = tmp_path / "run"
    for value in ("2", "-0.1", "nan"):
        err = assert_user_error(pretrain.main, pretrain_argv(train_files, out, "--dropout", value), capsys,
                                "--dropout must be between 0 and 1", value)
        assert "hidden_dropout_prob" not in err
    assert not (out / "model.safetensors").exists()
    args = pretrain.parse_args(["--dropout", "1.5"])  # the same check builds finetune's --init random model
    with pytest.raises(runtime.UserError, match="--dropout must be between 0 and 1"):
        args.model_config(None)
    # and fine-tuning from a pretrained folder, whose config would name hidden_dropout_prob
    err = assert_user_error(finetune.main, ["--init", str(tiny_mlm_dir), "--dropout", "2", "--out", str(out),
                                            "--train", str(train_files / "train.tsv")], capsys,
                            "--dropout must be between 0 and 1", "2")
    assert "hidden_dropout_prob" not in err and not (out / "model.safetensors").exists()


def test_release_names_a_file_given_as_a_model_folder(tiny_mlm_dir, tmp_path, capsys):
    """Was "not a metrics file: Expecting value: line 1 column 1 (char 0)"."""
    notes = tmp_path / "notes.txt"
    notes.write_text("not a model\n")
    out = tmp_path / "assets"
    for argv in (["--mlm", str(notes)], ["--mlm", str(tiny_mlm_dir), str(notes)], ["--classifier", str(notes)]):
        err = assert_user_error(release.main, [*argv, "--out", str(out)], capsys,
                                f"{notes} is a file, not a model folder")
        assert "metrics file" not in err and "Expecting value" not in err
    assert not out.exists()


def test_gpu_transfer_checks_max_mib_before_building(train_files, tmp_path, capsys):
    """--max-mib -1 compressed every file, then refused the bundle as over the limit."""
    out = tmp_path / "up"
    for value in ("-1", "0"):
        assert_user_error(gpu_transfer.main, ["bundle", "--data-root", str(train_files), "--files", "corpus.txt",
                                              "--tokenizer", str(train_files / "tokenizer.json"), "--out", str(out),
                                              "--max-mib", value], capsys, "--max-mib must be a positive")
        assert not out.exists()


# ----- 5. roberta's loaders -----
def test_pipeline_names_a_model_of_the_other_kind(tiny_mlm_dir, tiny_clf_dir):
    """Was a raw "does not fit RobertaForSequenceClassification: missing keys [...]"."""
    with pytest.raises(roberta.ModelLoadError, match="is a masked-LM model .*pipeline needs a classifier") as info:
        roberta.pipeline("sentiment-analysis", model=tiny_mlm_dir)
    assert "missing keys" not in str(info.value) and "fill-mask" in str(info.value)
    with pytest.raises(roberta.ModelLoadError, match="is a classifier .*pipeline needs a masked-LM model"):
        roberta.pipeline("fill-mask", model=tiny_clf_dir)
    assert roberta.pipeline("fill-mask", model=tiny_mlm_dir, device="cpu")("A <mask>.", top_k=1)
    assert roberta.pipeline("sentiment-analysis", model=tiny_clf_dir, device="cpu")("A dog.")


def test_encode_refuses_a_length_without_room_for_a_token(tokenizer):
    """max_length 0 and 1 were ignored (the whole text came back), 2 gave <s></s>."""
    for length in (0, 1, 2, -5):
        with pytest.raises(ValueError, match=f"max_length must be .*at least 3.*got {length}"):
            roberta.encode(tokenizer, ["Hello"], length)
        with pytest.raises(ValueError, match="at least 3"):
            roberta.tokenizer.encode_windows(tokenizer, ["Hello"], length)
    ids, mask, truncated = roberta.encode(tokenizer, ["Hello there, a longer text"], 3)
    assert ids.shape == (1, 3) and truncated == [True]


# ----- 6. help texts -----
@pytest.mark.parametrize("command", ["pack", "unpack"])
def test_gpu_transfer_help_explains_every_argument(command, capsys):
    code, out, _ = outcome(gpu_transfer.main, [command, "--help"], capsys)
    assert code == 0
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("positional arguments"))
    for name in ({"pack": "runs", "unpack": "returned"}[command], "--out OUT"):
        line = next(line for line in lines[start:] if line.strip().startswith(name))
        assert len(line.strip()) > len(name) + 5, (name, out)  # a help text beside the name


def test_finetune_help_says_what_every_input_becomes_and_when_to_split_at_random(capsys):
    """--help said every text goes through normalize_for_classifier, not that it is lower-cased (a user with cased
    data learned it from the README); --calibration-split sentences removed short or repeated rows of one's own
    data as "sub-phrases", and nothing suggested random. --dev '' read as a blank path: its help says it is
    required."""
    code, out, _ = outcome(finetune.main, ["--help"], capsys)
    assert code == 0
    words = " ".join(out.split())  # argparse wraps the help
    assert "lower-cased and detokenized (normalize_for_classifier)" in words  # --max-length's
    assert "it is lower-cased and detokenized" in words and "a classifier never sees case" in words  # the Data part
    assert "'random': any rows, for data that are not SST-2-style phrases" in words
    assert ("evaluation set, required unless --dev-fraction holds one out of --train (it cannot be skipped): a file "
            "with the same columns and labels as --train" in words)


@pytest.mark.parametrize("module", [analogy_probe, deploy_space, load_check, screenshots],
                         ids=lambda m: m.__name__)
def test_scripts_print_their_description_once(module, capsys):
    code, out, _ = outcome(module.main, ["--help"], capsys)
    assert code == 0
    summary = module.__doc__.split("\n")[0]
    assert out.count(summary) == 1, out
    details = module.__doc__.split("\n\n")[1].strip().split("\n")[0]
    assert out.count(details) == 1, out  # the rest of the docstring still shown, once


@pytest.mark.parametrize("native", [False, True])
def test_bf16_on_a_cpu_without_native_bf16_warns(native, monkeypatch, capsys):
    """bf16 autocast on a CPU without AMX or AVX512-BF16 is emulated (a mini step 62 s against 2 s in fp32 on
    an AVX2 EPYC): asking for it there says so; auto keeps choosing fp32 without a word."""
    monkeypatch.setattr(runtime, "CPU_DEFAULT_PRECISION", "bf16" if native else "fp32")
    assert runtime.resolve_precision("bf16", torch.device("cpu")) == "bf16"  # the user's choice stands
    warned = "emulated, about 30x slower than fp32" in capsys.readouterr().err
    assert warned is not native
    assert runtime.resolve_precision("auto", torch.device("cpu")) == ("bf16" if native else "fp32")
    assert runtime.resolve_precision("fp32", torch.device("cpu")) == "fp32"
    assert capsys.readouterr().err == ""


def test_evaluate_says_when_its_out_cannot_be_written(tiny_clf_dir, train_files, tmp_path, monkeypatch, capsys):
    """A read-only folder or a full disk at the end: a message and exit 2, the figures already printed (was a
    traceback after the whole evaluation)."""
    def read_only(self, path):
        raise OSError(30, "Read-only file system")
    monkeypatch.setattr(roberta.run_metrics.RunMetrics, "write", read_only)
    argv = ["--model", str(tiny_clf_dir), "--labeled", str(train_files / "dev.tsv"), "--out", str(tmp_path / "m.json")]
    assert evaluate.main(argv) == runtime.EXIT_USER_ERROR
    out, err = capsys.readouterr()
    assert "labeled:" in out and err.startswith(f"error: --out {tmp_path / 'm.json'}: Read-only file system")


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory):
    """Files each wrong in one way: a header alone, a label that is not one, not UTF-8, other columns, empty, a
    file where a folder is wanted."""
    folder = tmp_path_factory.mktemp("bad-inputs")
    (folder / "headeronly.tsv").write_text("sentence\tlabel\n")
    (folder / "badlabel.tsv").write_text("sentence\tlabel\ngood movie\t1\nbad movie\tmaybe\n")
    (folder / "nonutf8.tsv").write_bytes(b"sentence\tlabel\ngood movie\t1\nbad \xff movie\t0\n")
    (folder / "nonutf8.txt").write_bytes(b"A line.\n\xff\xfe line\n")
    (folder / "wrongcols.tsv").write_text("foo\tbar\nhello\t1\n")
    (folder / "empty.tsv").write_text("")
    (folder / "empty.txt").write_text("")
    (folder / "afile").write_text("a file\n")
    return folder


# (script, option, its bad value, what the message says after the option and value); each with otherwise valid options
NAMED = [
    ("finetune", "--train", "headeronly.tsv", ": no examples (only a header?)"),
    ("finetune", "--dev", "headeronly.tsv", ": no examples (only a header?)"),
    ("finetune", "--train", "badlabel.tsv", " line 3: label 'maybe' is not an int"),
    ("finetune", "--dev", "badlabel.tsv", " line 3: label 'maybe' is not an int"),
    ("finetune", "--checks", "nonutf8.tsv", " line 3: not UTF-8 text"),
    ("finetune", "--checks", "wrongcols.tsv", ": the header must be category<TAB>sentence<TAB>expected"),
    ("finetune", "--init", "nope", ": no such folder"),
    ("finetune", "--init", "afile", " is a file, not a model folder"),  # was "is not a tokenizer"
    ("finetune", "--imdb", "empty.tsv", ": empty file (expected a header line such as 'text<TAB>label')"),
    ("finetune", "--tokenizer", "nope", ": no such folder"),  # (with --init random)
    ("pretrain", "--init", "nope", ": no such folder"),
    ("pretrain", "--tokenizer", "nope", ": no such folder"),
    ("pretrain", "--corpus", "empty.txt", ": no documents found"),
    ("pretrain", "--valid", "empty.txt", ": no documents found"),
    ("pretrain", "--corpus", "nonutf8.txt", " line 2: not UTF-8 text"),
    ("pretrain", "--valid", "nonutf8.txt", " line 2: not UTF-8 text"),
    ("evaluate", "--labeled", "badlabel.tsv", " line 3: label 'maybe' is not an int"),
    ("evaluate", "--labeled", "nope.tsv", ": no such file"),
    ("evaluate", "--labeled", "headeronly.tsv", ": no examples (only a header?)"),
    ("evaluate", "--mlm-text", "empty.txt", ": no documents found"),
    ("evaluate", "--mlm-text", "nonutf8.txt", " line 2: not UTF-8 text"),
    ("evaluate", "--model", "nope", ": no such folder"),
    ("tokenizer", "--corpus", "empty.txt", ": no documents found"),
    ("tokenizer", "--eval-text", "nonutf8.txt", " line 2: not UTF-8 text"),
]


@pytest.mark.parametrize("script, option, name, message", NAMED, ids=[f"{s}{o}-{n}" for s, o, n, _ in NAMED])
def test_a_bad_file_is_named_with_its_option(script, option, name, message, bad_inputs, train_files, tiny_mlm_dir,
                                             tiny_clf_dir, tmp_path, capsys):
    """Each said "PATH: ..." (or, for --init, that a file "is not a tokenizer"), naming no option: now the one
    `error:` line starts with the option and the path (`train.runtime.naming`), and nothing is written."""
    out, bad = tmp_path / "out", bad_inputs / name
    argv, main = {
        "finetune": (finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--imdb", ""), finetune.main),
        "pretrain": (pretrain_argv(train_files, out), pretrain.main),
        "evaluate": (["--model", str(tiny_mlm_dir if option == "--mlm-text" else tiny_clf_dir),
                      *(["--mlm-text", str(train_files / "valid.txt")] if option == "--mlm-text" else
                        ["--labeled", str(train_files / "dev.tsv")])], evaluate.main),
        "tokenizer": (["--corpus", str(train_files / "corpus.txt"), "--vocab-size", "300", "--eval-text",
                       str(train_files / "valid.txt"), "--quiet", "--out", str(out)], tokenizer_cli.main),
    }[script]
    if script == "finetune" and option == "--tokenizer":
        argv += ["--init", "random", "--preset", "tiny"]
    err = assert_user_error(main, [*argv, option, str(bad)], capsys)
    assert err.startswith(f"error: {option} {bad}{message}") and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.parametrize("extra, message", [
    (["--preset", "huge"], "error: --preset 'huge' is not a preset; choose one of ['mini', 'roberta-base', 'tiny']"),
    (["--heads", "5"], "error: --hidden-size 32 (the tiny preset's) must be divisible by --heads 5"),
    (["--hidden-size", "30"], "error: --hidden-size 30 must be divisible by --heads 4 (the tiny preset's)"),
    (["--layers", "0"], "error: --layers must be at least 1, got 0"),
])
def test_the_shape_of_a_new_model_is_named_before_the_data_is_read(extra, message, train_files, tmp_path, capsys):
    """Were "unknown preset 'huge'" and "hidden_size (32) must be divisible by num_attention_heads (5)", the config's
    words, once the tokenizer was loaded (finetune: after the data was read)."""
    out = tmp_path / "out"
    argv = pretrain_argv(train_files, out, *extra)
    argv[argv.index("--corpus") + 1] = str(tmp_path / "missing.txt")  # not reached: the shape is named first
    assert assert_user_error(pretrain.main, argv, capsys).startswith(message)
    argv = finetune_argv(train_files, out, "--init", "random", "--tokenizer", str(train_files / "tokenizer.json"),
                         "--preset", "tiny", *extra)
    argv[argv.index("--train") + 1] = str(tmp_path / "missing.tsv")
    assert assert_user_error(finetune.main, argv, capsys).startswith(message)
    assert not out.exists()


def test_finetune_labels_must_be_distinct(train_files, tiny_mlm_dir, tmp_path, capsys):
    """Was "id2label: label names must be distinct, got ['a', 'a']", the config's words, after the data was read."""
    argv = finetune_argv(train_files, tmp_path / "out", "--init", str(tiny_mlm_dir), "--checks", "", "--labels", "a,a")
    assert_user_error(finetune.main, argv, capsys, "error: --labels must name two or more distinct labels, "
                                                   "comma-separated, got 'a,a'")


@pytest.mark.parametrize("main", [pretrain.main, export.main, average.main], ids=["pretrain", "export", "average"])
def test_help_names_checkpoint_folders_as_they_are_written(main, tmp_path, capsys):
    """--help said RUN/checkpoints/step-N; the folders are step-00001000 (the step in 8 digits)."""
    written = checkpointing.Checkpoints(tmp_path).save("step", 1000, {})
    code, out, _ = outcome(main, ["--help"], capsys)
    assert code == 0 and "step-N" not in out and f"checkpoints/{written.name}" in out


def test_pretraining_warns_when_its_held_out_text_is_one_of_its_corpus_sources(tmp_path, capsys):
    """`--corpus X --valid X` reported "held-out" figures on training text without a word; a spelling of the same
    file (./X) is the same source, another file is not."""
    text, other = tmp_path / "mine.txt", tmp_path / "other.txt"
    text.write_text("a line\n", encoding="utf-8")
    other.write_text("another line\n", encoding="utf-8")
    pretrain.warn_if_valid_is_trained_on(f"{other}=1,{tmp_path}/./mine.txt=2", str(text))
    assert capsys.readouterr().err == (f"warning: --valid {text} is also a --corpus source: the held-out figures "
                                       "will be on text the model trains on\n")
    pretrain.warn_if_valid_is_trained_on(str(other), str(text))
    assert capsys.readouterr().err == ""


def test_pretraining_warns_when_a_corpus_folder_holds_its_held_out_text(tmp_path, capsys):
    """A --corpus folder reads every text file in it: --valid among them was trained on without a word."""
    (tmp_path / "wiki.train.tokens").write_text("a line\n", encoding="utf-8")
    (tmp_path / "wiki.valid.tokens").write_text("another line\n", encoding="utf-8")
    pretrain.warn_if_valid_is_trained_on(str(tmp_path), str(tmp_path / "wiki.valid.tokens"))
    assert "is also a --corpus source" in capsys.readouterr().err
    pretrain.warn_if_valid_is_trained_on(str(tmp_path / "wiki.train.tokens"), str(tmp_path / "wiki.valid.tokens"))
    assert capsys.readouterr().err == ""
