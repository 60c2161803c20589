"""train.gpu_transfer and the .xz corpora it ships: bundle, pack into parts, unpack, read compressed text."""
import shutil

import pytest

import roberta
from train import data, gpu_transfer


@pytest.fixture()
def data_root(tmp_path, train_files):
    root = tmp_path / "shared"
    (root / "corpus").mkdir(parents=True)
    shutil.copy(train_files / "corpus.txt", root / "corpus" / "a.txt")
    shutil.copy(train_files / "valid.txt", root / "valid.tokens")
    shutil.copy(train_files / "train.tsv", root / "train.tsv")
    return root


def test_bundle_compresses_the_layout_and_reads_back(data_root, train_files, tmp_path):
    out = tmp_path / "upload"
    written = gpu_transfer.bundle(out, data_root, ["corpus", "valid.tokens", "train.tsv"],
                                  tokenizer=train_files / "tokenizer.json")
    assert {p.relative_to(out).as_posix() for p in written} == {
        "tokenizer.json", "data/corpus/a.txt.xz", "data/valid.tokens.xz", "data/train.tsv.xz"}
    # The training readers take the compressed files as they are.
    assert data.read_documents(out / "data" / "corpus") == data.read_documents(data_root / "corpus")
    assert data.read_documents(out / "data" / "valid.tokens.xz") == data.read_documents(data_root / "valid.tokens")
    assert data.read_labeled(out / "data" / "train.tsv.xz") == data.read_labeled(data_root / "train.tsv")
    with pytest.raises(ValueError, match="over --max-mib"):
        gpu_transfer.bundle(out, data_root, ["corpus"], tokenizer=train_files / "tokenizer.json", max_mib=1e-4)
    with pytest.raises(FileNotFoundError, match="missing"):
        gpu_transfer.bundle(out, data_root, ["missing"], tokenizer=train_files / "tokenizer.json")


def test_pack_and_unpack_round_trip(tiny_mlm_dir, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(tiny_mlm_dir, runs / "mlm")
    (runs / "mlm" / "checkpoints" / "step-1").mkdir(parents=True)
    (runs / "mlm" / "checkpoints" / "step-1" / "trainer.pt").write_bytes(b"x" * 1000)
    parts = gpu_transfer.pack(runs, tmp_path / "out", part_mib=0.05)  # several parts of 50 KiB
    assert len(parts) > 1 and all(p.stat().st_size <= 0.05 * gpu_transfer.MIB for p in parts)
    back = gpu_transfer.unpack(tmp_path / "out", tmp_path / "back")
    assert not (back / "mlm" / "checkpoints").exists()
    assert (back / "mlm" / "model.safetensors").read_bytes() == (runs / "mlm" / "model.safetensors").read_bytes()
    assert roberta.RobertaForMaskedLM.from_pretrained(back / "mlm")
    parts[1].unlink()
    with pytest.raises(ValueError, match="one missing"):
        gpu_transfer.unpack(tmp_path / "out", tmp_path / "again")
    with pytest.raises(ValueError, match="more than 2 parts"):
        gpu_transfer.pack(runs, tmp_path / "out2", part_mib=0.05, max_files=2)


def test_command_line_errors(tmp_path, capsys):
    assert gpu_transfer.main(["unpack", str(tmp_path), "--out", str(tmp_path / "x")]) == 2
    assert "runs.tar.xz.partNN" in capsys.readouterr().err
