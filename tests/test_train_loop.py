"""train.trainer and its parts (optim, checkpointing, runtime, reporting): schedule, weight decay, resume
equivalence, atomic checkpoints, NaN stop, signals, DDP, a checkpoint written before issue 12."""
import dataclasses
import errno
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import roberta
from train import checkpointing, finetune, optim, out_folder, pretrain, reporting, runtime, trainer
from helpers import contrast_with_white, finetune_argv, linear_rgb, lock_is_free, pretrain_argv

ROOT = Path(__file__).resolve().parents[1]


def open_ended_argv(files, out, *extra):
    """pretrain_argv for this file's runs: no --max-steps (each test gives the run's length in `extra`), no
    evaluation during the run, 8 rows for the one at its end."""
    return pretrain_argv(files, out, *extra, max_steps=None, eval_every=0, final_eval_rows=8)


def weights(folder):
    return load_file(str(Path(folder) / "model.safetensors"))


def train_losses(folder):
    return [(e["step"], e["loss"]) for e in reporting.read_log(Path(folder) / "log.jsonl") if e["type"] == "train"]


# ----- optimizer and schedule -----
def test_lr_schedule_shape():
    warmup, total = 10, 100
    for schedule in ("linear", "cosine"):
        lrs = [optim.lr_factor(s, warmup, total, schedule) for s in range(1, total + 1)]
        assert lrs[:warmup] == pytest.approx([s / warmup for s in range(1, warmup + 1)])  # linear warmup
        assert lrs[warmup - 1] == 1.0 and lrs[warmup] == 1.0  # peak
        decay = lrs[warmup:]
        assert all(a >= b for a, b in zip(decay, decay[1:]))  # monotone decay
        assert 0 < decay[-1] < 0.05  # ends near zero, never zero
    linear = [optim.lr_factor(s, warmup, total) for s in range(warmup + 1, total + 1)]
    steps = [a - b for a, b in zip(linear, linear[1:])]
    assert max(steps) == pytest.approx(min(steps))  # a straight line
    assert optim.lr_factor(1, 0, 10) == 1.0  # no warmup
    # only a time budget: after warmup the decay follows the share of the time used
    assert optim.lr_factor(5, 10, None, time_progress=None) == 0.5
    assert [optim.lr_factor(50, 10, None, time_progress=p) for p in (0, 0.25, 1, 1.5)] == [1, 0.75, 0, 0]
    assert optim.lr_factor(50, 10, None, "cosine", time_progress=0.5) == pytest.approx(0.5)


def test_schedule_cosine_from_the_command_line(train_files, tmp_path):
    """--schedule cosine reaches the trainer: after one warmup step, the logged lr is the peak times
    (1 + cos(pi * p)) / 2 at the share p of the decay done, not the straight line of the default."""
    out = tmp_path / "run"
    argv = open_ended_argv(train_files, out, "--max-steps", "5", "--warmup", "1", "--log-every", "1",
                           "--schedule", "cosine")
    assert pretrain.main(argv) == 0
    lrs = [e["lr"] for e in reporting.read_log(out / "log.jsonl") if e["type"] == "train"]
    cosine = [1.0] + [(1 + math.cos(math.pi * p)) / 2 for p in (0, 0.25, 0.5, 0.75)]  # steps 2-5: 1, .85, .5, .15
    assert lrs == pytest.approx([2e-3 * f for f in cosine], rel=1e-6)
    assert lrs != pytest.approx([2e-3 * f for f in (1, 1, 0.75, 0.5, 0.25)], rel=1e-3)  # linear's
    assert json.loads((out / "metrics.json").read_text())["command"].endswith("--schedule cosine")


def test_eval_seed_fixes_the_held_out_masks_whatever_the_seed(train_files, tmp_path, tiny_mlm_dir, monkeypatch):
    """Two runs from the same --init weights with other --seed and the same --eval-seed score the held-out rows on
    the same masks: their evaluations at step 0 (before any training) are identical, as the masks every
    evaluation of both runs draws; the training itself follows --seed."""
    from train import evaluate

    seeds, held_out_mask = [], evaluate.held_out_mask

    def recorded(tokenizer, rows, seed):
        seeds.append(seed)
        return held_out_mask(tokenizer, rows, seed)

    monkeypatch.setattr(evaluate, "held_out_mask", recorded)  # what pretrain imports when it runs
    logs = {}
    for seed in (3, 4):
        out = tmp_path / f"seed-{seed}"
        argv = open_ended_argv(train_files, out, "--init", str(tiny_mlm_dir), "--max-steps", "2", "--eval-every", "1",
                             "--log-every", "1", "--seed", str(seed), "--eval-seed", "7")
        argv.remove("--model-max-length"), argv.remove("32")  # the --init model's shape
        assert pretrain.main(argv) == 0
        logs[seed] = reporting.read_log(out / "log.jsonl")
        assert json.loads((out / "metrics.json").read_text())["eval_seed"] == 7
    assert seeds == [7] * 2  # each run masks its held-out rows once: steps 0, 1 and 2, and the final evaluation
    first = [{k: e[k] for k in ("loss", "accuracy")} for e in (logs[3][0], logs[4][0])]
    assert logs[3][0]["step"] == 0 and first[0] == first[1]  # the same weights on the same masks
    assert logs[3][1]["type"] == "train" and logs[3][1]["loss"] != logs[4][1]["loss"]  # other training masks


def test_the_periodic_evaluations_score_the_final_evaluations_masks_on_its_first_rows(train_files, tmp_path):
    """The periodic points masked their --eval-rows on their own: the same positions as the final evaluation's on
    those rows, other corruptions (<mask>, random, kept) for a third of them. They are the first rows of the final
    evaluation's masked set: at the last step (the final weights) the periodic figure is those rows' figure under
    the final evaluation's masks."""
    from train import data, evaluate, packing

    out = tmp_path / "run"
    argv = pretrain_argv(train_files, out, "--eval-rows", "2", "--eval-seed", "3", max_steps=2, eval_every=2)
    assert pretrain.main(argv) == 0
    periodic = [e for e in reporting.read_log(out / "log.jsonl") if e["type"] == "eval" and e["step"] == 2]
    model = roberta.RobertaForMaskedLM.from_pretrained(out).eval()
    tokenizer = roberta.load_tokenizer(out)
    rows = packing.pack_sequences(data.read_documents(str(train_files / "valid.txt")), tokenizer, 32)
    assert len(rows) > 2 and json.loads((out / "metrics.json").read_text())["eval_tokens"] > 0
    masked = roberta.DynamicMasker.from_tokenizer(tokenizer, seed=3)(rows.long())  # the final evaluation's
    first = type(masked)(masked.input_ids[:2], masked.labels[:2], masked.outcome[:2])
    loss_sum, correct, count = evaluate.masked_lm_sums(model, first, 8)
    assert len(periodic) == 1 and periodic[0]["loss"] == pytest.approx(loss_sum / count, rel=1e-5)
    assert periodic[0]["accuracy"] == correct / count


def test_a_pretraining_run_records_the_yardstick_of_its_final_evaluation_and_its_card_says_it(train_files,
                                                                                              tmp_path):
    """A fresh run's held-out accuracy came with no yardstick until `train.evaluate` was run on its folder: its
    final evaluation now records the best constant guess over the same targets (`train.evaluate.constant_guess` of
    its masks) beside its eval_ figures, and the card says what always guessing that token would score."""
    from train import data, evaluate, packing

    out = tmp_path / "run"
    assert pretrain.main(pretrain_argv(train_files, out, "--eval-seed", "3", max_steps=2, eval_every=2)) == 0
    tokenizer = roberta.load_tokenizer(out)
    rows = packing.pack_sequences(data.read_documents(str(train_files / "valid.txt")), tokenizer, 32)
    guess = evaluate.constant_guess([evaluate.held_out_mask(tokenizer, rows, 3)], tokenizer)  # the same masks
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["eval_constant_guess_token"] == guess["constant_guess_token"]
    assert metrics["eval_constant_guess_accuracy"] == pytest.approx(guess["constant_guess_accuracy"])
    assert 0 < metrics["eval_constant_guess_accuracy"] < 1 and "mlm" not in metrics  # not a later train.evaluate's
    card = (out / "README.md").read_text()
    assert (f"The yardstick of eval_accuracy ({metrics['eval_accuracy']:.1%}) is eval_constant_guess_accuracy: a "
            f"model that always guessed {guess['constant_guess_token']!r}, the commonest of the same targets (the "
            f"same rows and masks), would score {guess['constant_guess_accuracy']:.1%}.") in card


class SteppingClock:
    """The trainer's `time` module with a clock that moves `tick` seconds at every reading: a run under a time
    budget takes as many steps whatever the machine's speed or load (the rest of `time` is the real one)."""

    def __init__(self, tick: float):
        self.now, self.tick = 0.0, tick

    def monotonic(self) -> float:
        self.now += self.tick
        return self.now

    def __getattr__(self, name):
        return getattr(time, name)


def test_time_budget_stops_cleanly_with_decayed_lr(train_files, tmp_path, monkeypatch):
    monkeypatch.setattr(trainer, "time", SteppingClock(0.1))  # 3 s: about 8 steps, on any machine
    out = tmp_path / "run"
    argv = open_ended_argv(train_files, out, "--time-budget-min", "0.05", "--warmup", "1", "--log-every", "1")
    assert pretrain.main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["stopped_by"] == "time" and metrics["train_time_s"] >= 3  # its whole budget, not less
    lrs = [e["lr"] for e in reporting.read_log(out / "log.jsonl") if e["type"] == "train"]
    assert len(lrs) == metrics["train_steps"] > 3
    assert lrs[0] == pytest.approx(2e-3) and lrs[-1] < 0.2 * lrs[0]  # decays with the clock, to near 0
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))


def test_the_last_steps_of_a_time_budget_are_logged(train_files, tmp_path, monkeypatch):
    """A run ended by its time budget (no step total) logged its steps only every --log-every: the losses of the
    steps after the last multiple never reached log.jsonl or the curves. The last window is logged at the end."""
    monkeypatch.setattr(trainer, "time", SteppingClock(0.1))  # 3 s: about 8 steps
    out = tmp_path / "run"
    assert pretrain.main(open_ended_argv(train_files, out, "--time-budget-min", "0.05", "--log-every", "1000")) == 0
    steps = json.loads((out / "metrics.json").read_text())["train_steps"]
    assert [e["step"] for e in reporting.read_log(out / "log.jsonl") if e["type"] == "train"] == [steps]


@pytest.mark.slow  # end-to-end script run, several seconds
def test_a_fractional_warmup_with_only_a_time_budget_is_that_share_of_the_time(train_files, tmp_path, monkeypatch):
    # the GPU recipe's pretraining (--warmup 0.06 and only --time-budget-min): how many steps the machine gets
    # through is not known in advance, so the warmup follows the clock, as the decay does
    monkeypatch.setattr(trainer, "time", SteppingClock(0.02))  # 3 s: about 40 steps, on any machine
    out = tmp_path / "run"
    argv = open_ended_argv(train_files, out, "--time-budget-min", "0.05", "--warmup", "0.3", "--log-every", "1")
    assert pretrain.main(argv) == 0
    log = [e for e in reporting.read_log(out / "log.jsonl") if e["type"] == "train"]
    lrs = [e["lr"] for e in log]
    peak = lrs.index(max(lrs))
    assert lrs[0] == 0 and max(lrs) == pytest.approx(2e-3)  # from 0 (the first step, at time 0) to the peak lr
    assert 5 < peak < len(lrs) - 5  # warmup over many steps, then a decay over many more
    assert all(a <= b for a, b in zip(lrs[:peak], lrs[1:peak + 1]))
    assert all(a >= b for a, b in zip(lrs[peak:], lrs[peak + 1:]))
    assert 0.6 < log[peak - 1]["elapsed_s"] < 1.5  # 30% of 3 s: the clock when the step before the peak ended


class StepTimes:
    """A `time` module whose clock stands still except where a toy task moves it: a slow first step (compiling),
    a step-0 evaluation, fast steps after (the rest of `time` is the real one)."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def __getattr__(self, name):
        return getattr(time, name)


class TimedTask(trainer.Task):
    """A toy regression whose every session's first step takes `first_s` seconds of `clock` (torch.compile: 34 s
    on the H100 in phase 26), every other step `step_s`, an evaluation `eval_s`."""
    num_rows = 64

    def __init__(self, clock: StepTimes, first_s=20.0, step_s=1.0, eval_s=5.0):
        self.clock, self.first_s, self.step_s, self.eval_s = clock, first_s, step_s, eval_s
        self.steps_this_session = 0

    def make_batch(self, indices, epoch):
        g = torch.Generator().manual_seed(int(indices[0]))
        return {"x": torch.randn(len(indices), 4, generator=g), "y": torch.randn(len(indices), 1, generator=g)}

    def num_targets(self, batch):
        return len(batch["y"])

    def num_tokens(self, batch):
        return len(batch["y"])

    def tokens_per_row(self):
        return 1.0

    def loss_sum(self, model, batch):
        self.clock.now += self.first_s if self.steps_this_session == 0 else self.step_s
        self.steps_this_session += 1
        return ((model(batch["x"]) - batch["y"]) ** 2).sum()

    def evaluate(self, model):
        self.clock.now += self.eval_s
        return {"loss": 1.0}


def timed_run(out, monkeypatch, clock, **options):
    """A toy run under a 2-minute budget with a 20% warmup, on `clock`; its logged (step, lr, elapsed)."""
    monkeypatch.setattr(trainer, "time", clock)
    args = trainer.TrainingArguments(batch_size=8, lr=1e-3, warmup=0.2, time_budget_min=2, eval_every=1000,
                                     log_every=1, out=str(out), no_progress=True, save_every_min=0, **options)
    result = trainer.Trainer(torch.nn.Linear(4, 1), TimedTask(clock), args).fit()
    log = [e for e in reporting.read_log(out / "log.jsonl") if e["type"] == "train"]
    return result, [(e["step"], e["lr"], e["elapsed_s"]) for e in log]


def test_a_time_budget_warmup_starts_when_the_first_step_is_over(tmp_path, monkeypatch):
    """The warmup by the clock counted the step-0 evaluation and the first step: phase 26 compiled for 34 s of its
    23-s warmup and ran at full lr from its third step. It is counted from the end of the first step (compiling
    and the evaluation before it left out), as a share of the time left then, and the lr still reaches 0 when the
    time is up."""
    result, log = timed_run(tmp_path / "run", monkeypatch, StepTimes())
    lrs = [lr for _, lr, _ in log]
    assert result.status == "time" and lrs[:2] == [0.0, 0.0]  # the first step's clock is read at its end
    peak = lrs.index(max(lrs))
    assert max(lrs) == pytest.approx(1e-3)
    window = 0.2 * (120 - 25)  # 20% of the time after the step-0 evaluation (5 s) and the first step (20 s)
    assert peak == pytest.approx(window + 2, abs=1)  # steps of 1 s: as many warmup steps as seconds
    rises = [b - a for a, b in zip(lrs[1:peak], lrs[2:peak + 1])]
    assert all(step == pytest.approx(1e-3 / window, rel=0.01) for step in rises)  # a straight line
    assert all(a >= b for a, b in zip(lrs[peak:], lrs[peak + 1:])) and lrs[-1] < 0.02 * max(lrs)
    assert log[-1][2] >= 120  # the whole budget


def test_a_resumed_time_budget_warmup_leaves_out_the_resumed_sessions_first_step(tmp_path, monkeypatch):
    """A resumed session compiles again: its first step is not warmup time either, so the ramp goes on where the
    checkpoint left it (counting it jumped by the 20 s of recompiling, most of the window)."""
    out, clock = tmp_path / "run", StepTimes()
    with monkeypatch.context() as m:
        interrupt_at(m, 6)
        result, first = timed_run(out, m, clock)
    assert result.status == "interrupted" and [s for s, _, _ in first] == [1, 2, 3, 4, 5, 6]
    result, log = timed_run(out, monkeypatch, clock, resume=True)  # the whole run's log
    assert [s for s, _, _ in log[:7]] == [1, 2, 3, 4, 5, 6, 7]
    lrs = [lr for _, lr, _ in log]
    peak = lrs.index(max(lrs))
    rises = [b - a for a, b in zip(lrs[1:peak], lrs[2:peak + 1])]
    assert peak > 15 and max(rises) < 2 * min(rises)  # no jump at the resume
    assert result.status == "time" and lrs[-1] < 0.02 * max(lrs)


@pytest.mark.parametrize("warmup, warned", [("10", True), ("4", True), ("3", False), ("0.5", False)])
def test_a_warmup_as_long_as_the_run_is_warned_about(train_files, tmp_path, capsys, warmup, warned):
    """--warmup 300 (pretraining's default) in a 200-step run: the lr never decays, ending at 2/3 of --lr. Said in
    one line on stderr, with what to pass; the run goes on (tiny runs are short on purpose)."""
    assert pretrain.main(open_ended_argv(train_files, tmp_path / "run", "--max-steps", "4", "--warmup", warmup)) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "never decays" in line]
    if not warned:
        assert lines == []
        return
    assert len(lines) == 1 and lines[0].startswith(f"warning: --warmup {warmup} is {warmup} steps, and the run has 4")
    assert "pass a --warmup below the run's steps" in lines[0]


class Tokenized(Exception):
    """Raised by a test's stand-in once a run has tokenized what it wanted to see: the run stops there."""


def test_no_progress_also_silences_the_tokenizing_bar(train_files, tmp_path, monkeypatch):
    from train import packing

    asked, tokenize = [], packing.tokenize_documents

    def tokenize_documents(docs, tok, show_progress=None, **kw):
        asked.append(show_progress)
        rows = tokenize(docs, tok, False)
        if len(asked) % 2 == 0:  # the held-out rows, after the training rows: the rest of the run is not needed
            raise Tokenized
        return rows

    monkeypatch.setattr(packing, "tokenize_documents", tokenize_documents)
    with pytest.raises(Tokenized):
        pretrain.main(open_ended_argv(train_files, tmp_path / "quiet", "--max-steps", "1"))
    argv = [a for a in open_ended_argv(train_files, tmp_path / "auto", "--max-steps", "1") if a != "--no-progress"]
    with pytest.raises(Tokenized):
        pretrain.main(argv)
    assert asked == [False, False, None, None]  # training rows and held-out rows; None: a bar if long


def test_length_grouped_batches_are_a_permutation_of_similar_lengths():
    lengths = torch.randint(1, 70, (1000,), generator=torch.Generator().manual_seed(2))
    order = torch.randperm(1000, generator=torch.Generator().manual_seed(0))
    grouped = trainer.length_grouped(order, lengths, 8, torch.Generator().manual_seed(1))  # chunks of 400 rows
    assert sorted(grouped.tolist()) == list(range(1000))  # every row once

    def padded(o):  # what a batch costs: its longest row, times its rows
        return sum(int(lengths[b].max()) * len(b) for b in o.split(8))
    assert padded(grouped) < 0.7 * padded(order)
    spreads = [int(lengths[b].max() - lengths[b].min()) for b in grouped.split(8)]
    assert sorted(spreads)[len(spreads) // 2] <= 3  # most batches: lengths within a few tokens
    first_half = torch.stack([lengths[b].float().mean() for b in grouped.split(8)[:60]]).mean()
    assert 25 < first_half < 45  # batches shuffled: no long-to-short drift through the epoch (mean ~35)


class LengthTask(TimedTask):
    """Rows of random lengths 1-69 (as SST-2's phrases), for --batch-order length."""

    def __init__(self, rows: int):
        super().__init__(StepTimes())
        self.num_rows = rows
        self.lengths = torch.randint(1, 70, (rows,), generator=torch.Generator().manual_seed(2))

    def row_lengths(self):
        return self.lengths


@pytest.mark.parametrize("rows", [4817, 1001, 4800])
def test_every_batch_the_trainer_takes_is_of_one_length_group(tmp_path, rows):
    """The trainer takes fixed slices of the grouped order (the last one wrapping around to the epoch's start). The
    one short batch, shuffled into the middle, shifted every slice after it across two length groups (spreads of
    29, 34, 58 tokens; SST-2 padded 1.12x, not 1.04x): now every slice is of one group, wrapped one included."""
    task = LengthTask(rows)  # 4,817 = 150 x 32 + 17: three chunks of 50 batches, the last one with the short batch
    args = trainer.TrainingArguments(batch_size=32, max_steps=1, batch_order="length", out=str(tmp_path / "run"),
                                     no_progress=True)
    run = trainer.Trainer(torch.nn.Linear(4, 1), task, args)
    for epoch in range(2):
        batches = [run._next_indices() for _ in range(run.steps_per_epoch)]
        assert {e for _, e in batches} == {epoch}
        seen = torch.cat([rows for rows, _ in batches])
        assert set(seen.tolist()) == set(range(rows))  # every row in the epoch
        spreads = [int(task.lengths[b].max() - task.lengths[b].min()) for b, _ in batches]
        assert max(spreads) <= 4, spreads


def scheme_1_order(order, lengths, batch_size, generator, megabatch=50):
    """`trainer.length_grouped` as it was before batches kept to one length group (d400caa to 00703c3): a
    checkpoint of then, resumed, must finish its epoch in this order."""
    chunks = [c[torch.argsort(lengths[c], descending=True, stable=True)] for c in order.split(batch_size * megabatch)]
    batches = torch.cat(chunks).split(batch_size)
    return torch.cat([batches[i] for i in torch.randperm(len(batches), generator=generator)])


def grouped_run(out, task, resume=False):
    args = trainer.TrainingArguments(batch_size=32, max_steps=1000, batch_order="length", out=str(out),
                                     no_progress=True, resume=resume)
    return trainer.Trainer(torch.nn.Linear(4, 1), task, args)


def epoch_rows(run, batches):
    """The rows of the next `batches` batches `run` takes, in order."""
    return torch.cat([run._next_indices()[0] for _ in range(batches)])


def stop_after(out, task, batches, forget=()):
    """A run into `out` that took `batches` batches and saved its checkpoint there, the trainer state's keys in
    `forget` deleted (a checkpoint of code that did not save them); the rows it took."""
    run = grouped_run(out, task)
    rows = epoch_rows(run, batches)
    run.step = batches
    path = run.save_checkpoint()
    state = torch.load(path / "trainer.pt", weights_only=False)
    for key in forget:
        del state[key]
    torch.save(state, path / "trainer.pt")
    return rows


def test_a_resume_mid_epoch_keeps_the_length_grouped_order_the_epoch_began_in(tmp_path, capsys):
    """The length-grouped order changed (batches no longer straddle length groups): a checkpoint of the old order,
    resumed in the middle of an epoch, took the rest of it in the new one, repeating some rows and skipping others
    without a word. The trainer state records the order's scheme; a checkpoint of an earlier scheme finishes its
    epoch in it (said in a line), the next epochs take today's; one of today's scheme resumes as before."""
    task = LengthTask(4817)  # 151 batches of 32 an epoch
    whole = grouped_run(tmp_path / "whole", task)
    today = [epoch_rows(whole, whole.steps_per_epoch) for _ in range(2)]
    for forget in ((), ("batch_order_scheme",)):  # without the field, warmup_paused_s dates it: today's scheme
        out = tmp_path / f"today{len(forget)}"
        rows = stop_after(out, task, 60, forget)
        resumed = grouped_run(out, task, resume=True)
        assert torch.equal(torch.cat([rows, epoch_rows(resumed, 151 - 60 + 151)]), torch.cat(today))
        assert "earlier version" not in capsys.readouterr().err
    generator = torch.Generator().manual_seed(0 * 100_003 + 0)  # seed 0, epoch 0, as `Trainer._next_indices`
    old_epoch = scheme_1_order(torch.randperm(4817, generator=generator), task.lengths, 32, generator)
    old_epoch = torch.cat([old_epoch, old_epoch[:151 * 32 - 4817]])  # the last batch wraps around
    out = tmp_path / "old"
    stop_after(out, task, 60, forget=("batch_order_scheme", "warmup_paused_s"))  # a checkpoint of before 00703c3
    resumed = grouped_run(out, task, resume=True)
    assert ("note: the checkpointed run stopped after 60 of the 151 batches of an epoch, in the length-grouped order "
            "of an earlier version (scheme 1; this version's is 2): the rest of that epoch keeps its order, so that "
            "no row is repeated or skipped") in capsys.readouterr().err
    rest = epoch_rows(resumed, 30)
    resumed.step += 30
    again = resumed.save_checkpoint()  # in the epoch that keeps scheme 1: it says so, for a second resume
    assert torch.load(again / "trainer.pt", weights_only=False)["batch_order_scheme"] == 1
    resumed = grouped_run(out, task, resume=True)
    rest = torch.cat([rest, epoch_rows(resumed, 151 - 90)])
    assert torch.equal(rest, old_epoch[60 * 32:])
    assert sorted(set(torch.cat([old_epoch[:60 * 32], rest]).tolist())) == list(range(4817))  # every row
    assert torch.equal(epoch_rows(resumed, 151), today[1])  # the next epoch: today's order


def test_each_epoch_visits_every_row_in_a_new_order(train_files, tmp_path, monkeypatch, capsys):
    """Each epoch starts with a permutation of all the training rows, drawn anew for each epoch (from the seed and
    the epoch number): the same order in every epoch passed every other training test, slow ones too."""
    rows_by_epoch, original = {}, pretrain.MLMTask.make_batch

    def make_batch(self, indices, epoch):
        rows_by_epoch.setdefault(epoch, []).extend(indices.tolist())
        return original(self, indices, epoch)

    monkeypatch.setattr(pretrain.MLMTask, "make_batch", make_batch)
    argv = open_ended_argv(train_files, tmp_path / "run", "--max-steps", "9", "--corpus-chars", "800")
    assert pretrain.main(argv) == 0
    rows = int(next(line for line in capsys.readouterr().out.splitlines() if "training rows of" in line).split()[0])
    *whole, _ = rows_by_epoch.values()  # the last epoch may be cut short by --max-steps
    assert len(whole) >= 2
    assert all(sorted(epoch[:rows]) == list(range(rows)) for epoch in whole)  # every row once, then wraps around
    assert whole[0][:rows] != whole[1][:rows]


@pytest.mark.slow  # two end-to-end fine-tuning runs
def test_finetune_batch_order_length_pads_less(train_files, tmp_path, tiny_mlm_dir, monkeypatch):
    shapes, original = {}, finetune.ClassificationTask.make_batch

    def record(order):
        def make_batch(self, indices, epoch):
            batch = original(self, indices, epoch)
            shapes.setdefault(order, []).append(batch["input_ids"].numel())
            return batch
        return make_batch

    for order in ("random", "length"):
        monkeypatch.setattr(finetune.ClassificationTask, "make_batch", record(order))
        argv = finetune_argv(train_files, tmp_path / order, "--init", str(tiny_mlm_dir), "--batch-order", order,
                             "--max-steps", "10", "--eval-every", "0", "--imdb", "", "--checks", "")
        assert finetune.main(argv) == 0
    assert len(shapes["random"]) == len(shapes["length"]) > 1  # the same steps
    assert sum(shapes["length"]) < sum(shapes["random"])
    assert "| batch_order | length |" in (tmp_path / "length" / "README.md").read_text()  # the card's recipe


def test_a_batch_larger_than_the_training_set_is_warned_about(train_files, tmp_path, capsys):
    """--batch-size above the number of training rows was taken silently: each batch wraps around the epoch, so
    every step trained on each row about twice (and an extreme one was killed for memory with no word). Now one
    warning line says so; a batch that fits says nothing."""
    # 150 characters pack into 3-4 rows of 32 tokens: which documents the cap takes depends on the corpus's path (the
    # sampling is seeded with it), and 300 characters gave 6 to 8 rows, 8 (no warning due) in one CI run
    argv = open_ended_argv(train_files, tmp_path / "small", "--max-steps", "1", "--corpus-chars", "150")
    assert pretrain.main(argv) == 0
    out, err = capsys.readouterr()
    rows = int(next(line for line in out.splitlines() if "training rows of" in line).split()[0])
    assert rows < 8  # pretrain_argv's batch
    warning = [line for line in err.splitlines() if line.startswith("warning: --batch-size")]
    assert warning == [f"warning: --batch-size 8 is more than the {rows} training rows: every step repeats rows "
                       f"(each about {8 / rows:.1f} times)"], err
    assert pretrain.main(open_ended_argv(train_files, tmp_path / "full", "--max-steps", "1")) == 0
    assert "--batch-size" not in capsys.readouterr().err


def test_a_training_file_of_one_label_is_warned_about(train_files, tiny_mlm_dir, tmp_path, capsys):
    """A training TSV whose label column holds one value fine-tuned without a word, to a classifier that answers
    that label. Now a warning names the file and the label; a dev set of one label (it may be meant) and a
    training file of two say nothing."""
    one_label = tmp_path / "positive.tsv"
    one_label.write_text("sentence\tlabel\n" + "".join(f"a fine day number {i}\t1\n" for i in range(20)))
    quick = ("--init", str(tiny_mlm_dir), "--max-steps", "1", "--eval-every", "0", "--calibration-n", "0",
             "--imdb", "", "--checks", "")
    argv = finetune_argv(train_files, tmp_path / "one", *quick, "--train", str(one_label), "--dev", str(one_label))
    assert finetune.main(argv) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warning == [f"warning: --train {one_label}: every row has the label 1 (positive): a classifier trained "
                       "on one label learns to answer it whatever the text"]
    assert finetune.main(finetune_argv(train_files, tmp_path / "two", *quick, "--dev", str(one_label))) == 0
    assert "every row has the label" not in capsys.readouterr().err


def test_weight_decay_groups(tiny_config):
    model = roberta.RobertaForMaskedLM(tiny_config)
    decay, no_decay = optim.param_groups(model, 0.01)
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = {names[id(p)] for p in decay["params"]}
    not_decayed = {names[id(p)] for p in no_decay["params"]}
    assert decayed | not_decayed == set(names.values()) and not decayed & not_decayed
    assert all(n.endswith(".bias") or "LayerNorm" in n or "layer_norm" in n for n in not_decayed)
    assert "roberta.encoder.layer.0.attention.self.query.bias" in not_decayed
    assert "roberta.encoder.layer.0.output.LayerNorm.weight" in not_decayed
    assert "lm_head.bias" in not_decayed
    assert "roberta.encoder.layer.0.attention.self.query.weight" in decayed
    assert "roberta.embeddings.word_embeddings.weight" in decayed
    opt = optim.make_optimizer(model, 1e-3, 0.01)
    assert opt.defaults["betas"] == (0.9, 0.98) and opt.defaults["eps"] == 1e-6


class ClipSpy:
    """torch.nn.utils.clip_grad_norm_ as the trainer calls it (once per optimizer step): records the max norm it
    is given, the gradients before it and their norm after it, then does its work."""

    def __init__(self, monkeypatch):
        self.real, self.max_norms, self.grads, self.norms_after = torch.nn.utils.clip_grad_norm_, [], [], []
        monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", self)

    def __call__(self, parameters, max_norm, *args, **kwargs):
        parameters = [p for p in parameters if p.grad is not None]
        self.max_norms.append(max_norm)
        self.grads.append([p.grad.clone() for p in parameters])
        norm = self.real(parameters, max_norm, *args, **kwargs)
        self.norms_after.append(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in parameters])).item())
        return norm


def one_step(train_files, folder, monkeypatch, *options) -> ClipSpy:
    """One optimizer step of a pretraining run on 4 rows (no dropout: pretraining's default), spied on."""
    spy = ClipSpy(monkeypatch)
    assert pretrain.main(open_ended_argv(train_files, folder, "--batch-size", "4", "--max-steps", "1", *options)) == 0
    assert len(spy.max_norms) == 1  # one step, one clipping
    return spy


def test_grad_accum_sums_the_gradients_of_all_its_micro_batches(train_files, tmp_path, monkeypatch):
    """Batch 4 as 2 micro-batches of 2 rows gives the gradient of the 4 rows at once: a mutation that gave every
    micro-batch the first rows (0:2 twice) went unnoticed."""
    whole = one_step(train_files, tmp_path / "whole", monkeypatch).grads[0]
    split = one_step(train_files, tmp_path / "split", monkeypatch, "--grad-accum", "2").grads[0]
    assert len(whole) == len(split) and any(bool(g.abs().max() > 0) for g in whole)
    for a, b in zip(whole, split):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("clip, max_norm", [("0.5", 0.5), ("0", math.inf)])
def test_clip_grad_is_the_max_norm_of_every_step_and_0_turns_it_off(train_files, tmp_path, monkeypatch, clip,
                                                                    max_norm):
    """--clip-grad had no test: a run without clipping passed them all."""
    spy = one_step(train_files, tmp_path / "run", monkeypatch, "--clip-grad", clip)
    assert spy.max_norms == [max_norm]
    before = torch.linalg.vector_norm(torch.stack([g.norm() for g in spy.grads[0]])).item()
    if math.isinf(max_norm):  # off: the gradient as it is
        assert spy.norms_after[0] == pytest.approx(before)
    else:
        assert before > max_norm and spy.norms_after[0] == pytest.approx(max_norm, rel=1e-4)  # scaled down to it


# ----- resume -----
def interrupt_at(monkeypatch, step):
    """Send ourselves SIGINT during step `step` (the real signal path): that step completes, then the run stops."""
    original = trainer.Trainer._train_step

    def train_step(self, time_up):
        if self.step == step:
            os.kill(os.getpid(), signal.SIGINT)
        return original(self, time_up)

    monkeypatch.setattr(trainer.Trainer, "_train_step", train_step)


@pytest.mark.slow  # end-to-end script run, several seconds
@pytest.mark.parametrize("masking,precision", [("dynamic", "fp32"), ("static", "fp32"), ("dynamic", "bf16")])
def test_resume_is_bit_identical(train_files, tmp_path, monkeypatch, capsys, masking, precision):
    # dropout on (pretraining's default is off: it draws from torch's global generator, which the checkpoint
    # must restore), gradient accumulation, an evaluation in the middle: all must be restored exactly
    extra = ["--max-steps", "8", "--grad-accum", "2", "--eval-every", "3", "--masking", masking, "--dupe-factor", "2",
             "--log-every", "1", "--corpus-chars", "800",  # about 3 steps per epoch: resume crosses epochs
             "--dropout", "0.1", "--precision", precision]
    full, split = tmp_path / "full", tmp_path / "split"
    assert pretrain.main(open_ended_argv(train_files, full, *extra)) == 0
    config = json.loads((full / "config.json").read_text())
    assert config["hidden_dropout_prob"] == config["attention_probs_dropout_prob"] == 0.1

    with monkeypatch.context() as m:
        interrupt_at(m, 5)
        assert pretrain.main(open_ended_argv(train_files, split, *extra)) == runtime.EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert "SIGINT" in err and "interrupted at step 5" in err and "--resume" in err
    ckpt = checkpointing.Checkpoints(split).latest()
    assert ckpt.name == "step-00000005"
    assert not (split / "model.safetensors").exists()  # no final folder for an interrupted run

    assert pretrain.main(open_ended_argv(train_files, split, *extra, "--resume")) == 0
    assert "resumed from" in capsys.readouterr().err
    a, b = weights(full), weights(split)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert train_losses(full) == train_losses(split)  # the log was continued, not duplicated
    assert not (split / checkpointing.CHECKPOINTS).exists()  # removed after a finished run


def test_ema_keeps_the_moving_average_of_every_step_and_resumes_it(train_files, tmp_path, tiny_mlm_dir, monkeypatch,
                                                                    capsys):
    """--ema-decay d: the kept weights are w1, then d * avg + (1 - d) * w_k after every step (from the step
    checkpoints), the end-of-run weights' dev accuracy is recorded beside them, and an interrupted run resumes
    the average exactly."""
    decay = 0.6
    argv = lambda out, *extra: finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--ema-decay", str(decay),
                                             "--dropout", "0.1", "--imdb", "", "--checks", "", "--max-steps", "4",
                                             "--eval-every", "0", *extra)
    full, split = tmp_path / "full", tmp_path / "split"
    assert finetune.main(argv(full, "--save-every", "1", "--keep-checkpoints")) == 0
    steps = sorted((full / checkpointing.CHECKPOINTS).iterdir())
    assert len(steps) == 4
    expected = None
    for step in steps:
        w, _ = checkpointing.Checkpoints.load(step)
        expected = dict(w) if expected is None else {k: decay * expected[k] + (1 - decay) * w[k] for k in w}
    kept = weights(full)
    assert expected.keys() <= kept.keys()  # (the saved folder adds transformers' zero token-type table)
    for name in expected:
        assert torch.allclose(kept[name].float(), expected[name], atol=1e-6), name
    assert not torch.equal(kept["classifier.out_proj.weight"], w["classifier.out_proj.weight"])  # not the end
    metrics = json.loads((full / "metrics.json").read_text())
    assert metrics["selection"] == f"ema {decay}" and 0 <= metrics["end_weights_dev_accuracy"] <= 1
    assert "moving average" in (full / "README.md").read_text()

    with monkeypatch.context() as m:
        interrupt_at(m, 2)
        assert finetune.main(argv(split)) == runtime.EXIT_INTERRUPTED
    assert finetune.main(argv(split, "--resume")) == 0
    resumed = weights(split)
    for name in kept:
        assert torch.equal(resumed[name], kept[name]), name
    assert finetune.main(argv(tmp_path / "no", "--select", "calibration")) == runtime.EXIT_USER_ERROR
    assert "--select last only" in capsys.readouterr().err


# A run of RESUMED to its end and the same run interrupted during step 5 (checkpoints step 4 and 5, log entries every
# 3 steps: step 5 is in the middle of a window), made once for the tests that resume a copy of the interrupted one.
RESUMED = ["--max-steps", "6", "--save-every", "2", "--log-every", "3"]


@pytest.fixture(scope="module")
def finished_and_interrupted(train_files, tmp_path_factory):
    root = tmp_path_factory.mktemp("resumed")
    full, split = root / "full", root / "split"
    assert pretrain.main(open_ended_argv(train_files, full, *RESUMED)) == 0
    with pytest.MonkeyPatch.context() as m:
        interrupt_at(m, 5)
        assert pretrain.main(open_ended_argv(train_files, split, *RESUMED)) == runtime.EXIT_INTERRUPTED
    assert sorted(p.name for p in (split / checkpointing.CHECKPOINTS).iterdir()) == ["step-00000004", "step-00000005"]
    return full, split


@pytest.fixture
def interrupted(finished_and_interrupted, tmp_path):
    """(the finished run, a copy of the interrupted one of its own in tmp_path)."""
    full, split = finished_and_interrupted
    return full, Path(shutil.copytree(split, tmp_path / "split"))


def test_resume_refuses_to_overwrite_and_checks_folder(train_files, interrupted, tmp_path, capsys):
    full, split = interrupted
    full = Path(shutil.copytree(full, tmp_path / "full"))  # (the shared one stays as it is, whatever happens here)
    for out in (split, full):  # a run's checkpoints, a finished run
        before = sorted(p.name for p in out.rglob("*"))
        assert pretrain.main(open_ended_argv(train_files, out, *RESUMED)) == runtime.EXIT_USER_ERROR
        assert "already holds a run" in capsys.readouterr().err
        assert sorted(p.name for p in out.rglob("*")) == before


def test_kept_checkpoints_are_every_step_and_export_as_model_folders_to_average(train_files, tmp_path):
    """--keep-checkpoints keeps every step checkpoint (a run's trajectory); train.export makes one a model folder
    (the checkpoint's weights, the run's config and tokenizer) that train.average takes like a finished run."""
    from train import average, export
    out = tmp_path / "run"
    assert pretrain.main(open_ended_argv(train_files, out, "--max-steps", "3", "--save-every", "1",
                                       "--keep-checkpoints")) == 0
    kept = sorted(p.name for p in (out / checkpointing.CHECKPOINTS).iterdir())
    assert kept == [f"step-0000000{i}" for i in (1, 2, 3)]  # not only the newest two

    step2 = tmp_path / "step-2"
    assert export.main([str(out / checkpointing.CHECKPOINTS / kept[1]), str(step2), "--dtype", "float32"]) == 0
    saved, state = checkpointing.Checkpoints.load(out / checkpointing.CHECKPOINTS / kept[1])
    model = roberta.RobertaForMaskedLM.from_pretrained(step2)
    for name, value in model.state_dict().items():
        assert torch.equal(value, saved[name]), name
    assert not torch.equal(saved["roberta.embeddings.word_embeddings.weight"],
                           roberta.RobertaForMaskedLM.from_pretrained(out).roberta.embeddings.word_embeddings.weight)
    metrics = json.loads((step2 / "metrics.json").read_text())
    assert metrics["train_steps"] == 2 and metrics["train_tokens"] == state["tokens"] > 0
    assert (step2 / "tokenizer.json").read_text(encoding="utf-8") == \
        (out / "tokenizer.json").read_text(encoding="utf-8")
    assert "held-out" not in (step2 / "README.md").read_text()  # the run's card describes its end, not this step
    assert "held-out" in (out / "README.md").read_text()

    assert average.main([str(step2), str(out), "--out", str(tmp_path / "avg"), "--mlm-seeds", "2"]) == 0
    assert json.loads((tmp_path / "avg" / "metrics.json").read_text())["averaged"] == 2


def test_exporting_a_checkpoint_of_an_unfinished_run_is_a_clear_error(train_files, tmp_path, capsys):
    from train import export
    checkpoint = checkpointing.Checkpoints(tmp_path / "run").save("step", 1, {"w": torch.ones(2)})
    assert export.main([str(checkpoint), str(tmp_path / "out")]) == 2
    assert "export a checkpoint once its run has finished" in capsys.readouterr().err


# ----- atomic checkpoints -----
def test_crash_while_saving_keeps_previous_checkpoint(train_files, tmp_path, monkeypatch, tiny_config, capsys):
    out = tmp_path / "run"
    calls = []
    real_save = checkpointing.save_file

    def crashing_save(tensors, filename, *args, **kwargs):
        calls.append(filename)
        if len(calls) == 2:  # the second checkpoint: write half a file, then "crash"
            Path(filename).write_bytes(b"\0" * 100)
            raise RuntimeError("simulated crash while writing")
        return real_save(tensors, filename, *args, **kwargs)

    monkeypatch.setattr(checkpointing, "save_file", crashing_save)
    # a write that fails (a full disk: torch.save's "unexpected pos ...") is said as such, naming what is kept
    assert pretrain.main(open_ended_argv(train_files, out, "--max-steps", "3", "--save-every", "1")) == \
        runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "could not write the checkpoint step-00000002" in err and "is the disk full? simulated crash" in err
    assert "the checkpoint step-00000001 is kept" in err and "--resume" in err and "Traceback" not in err
    monkeypatch.setattr(checkpointing, "save_file", real_save)

    ckpts = checkpointing.Checkpoints(out)
    latest = ckpts.latest()
    assert latest.name == "step-00000001"  # the good one, untouched
    assert [p.name for p in (out / checkpointing.CHECKPOINTS).iterdir()] == ["step-00000001"]  # no half-written folder
    model_state, state = ckpts.load(latest)  # safetensors + weights_only torch.load
    assert state["step"] == 1 and set(state) >= {"optimizer", "rng", "task", "epoch", "batch_in_epoch"}
    model = roberta.RobertaForMaskedLM(dataclasses.replace(tiny_config, max_position_embeddings=32 + 2))
    model.load_state_dict(model_state)

    # a real crash can leave a temporary folder behind: --resume ignores and removes it
    leftover = out / checkpointing.CHECKPOINTS / ".tmp-step-00000002-123"
    leftover.mkdir()
    assert pretrain.main(open_ended_argv(train_files, out, "--max-steps", "3", "--save-every", "1", "--resume")) == 0
    assert not leftover.exists() and json.loads((out / "metrics.json").read_text())["train_steps"] == 3
    assert roberta.RobertaForMaskedLM.from_pretrained(out).config.max_position_embeddings == 32 + 2


def test_options_changed_on_resume_are_recorded_with_the_run(train_files, interrupted, capsys):
    """A --resume with other options warns, and the run's metrics.json keeps which steps ran with which (its
    command is the last one's: the first 5 steps' learning rate was lost before)."""
    _, split = interrupted  # --lr 2e-3 (pretrain_argv's)
    assert pretrain.main(open_ended_argv(train_files, split, *RESUMED, "--lr", "1e-3", "--resume")) == 0
    assert "options differ from the checkpointed run: lr 0.002 -> 0.001" in capsys.readouterr().err
    metrics = json.loads((split / "metrics.json").read_text())
    assert metrics["resumed_with"] == [{"step": 5, "changed": {"lr": [0.002, 0.001]}}]
    assert metrics["command"].endswith("--lr 1e-3 --resume")


def test_a_resume_with_another_model_shape_says_which_fields_differ_in_a_line(train_files, interrupted, tiny_mlm_dir,
                                                                            capsys):
    """--resume with another --hidden-size printed load_state_dict's list of every mismatched weight (7 KB; pages
    of "Missing key(s)" with --layers 3) after a hint to add --model-max-length 32, which was given already; a
    fine-tuning resumed in a pretraining run's folder gave the same dump. Now one line names the config fields
    that differ, and the length hint comes only when the length differs."""
    _, split = interrupted  # the tiny preset (hidden 32, 2 layers), --model-max-length 32
    cases = [(["--hidden-size", "16", "--heads", "2"], "hidden_size 32 (this command: 16)", "--hidden-size"),
             (["--layers", "3"], "layers 2 (this command: 3)", "--layers"),
             (["--model-max-length", "48"], "max_length 32 (this command: 48)", "add --model-max-length 32")]
    for extra, differ, how in cases:
        assert pretrain.main(open_ended_argv(train_files, split, *RESUMED, *extra, "--resume")) == \
            runtime.EXIT_USER_ERROR
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.startswith(f"error: {split / checkpointing.CHECKPOINTS / 'step-00000005'} does not fit this model: "
                              f"the checkpointed run's has {differ}"), err
        # one line, whatever the folder's path: its length is not the message's (a long pytest --basetemp passed 400)
        short = len(err.replace(str(split), "RUN"))
        assert how in err and short < 400 and "size mismatch" not in err and "Missing key" not in err, err
        assert ("--model-max-length 32" in err) == (extra[0] == "--model-max-length"), err
    argv = finetune_argv(train_files, split, "--init", str(tiny_mlm_dir), "--imdb", "", "--checks", "", "--resume")
    assert finetune.main(argv) == runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "holds the checkpoint of a masked LM (a pretraining run), and this command trains a classifier" in err, err
    assert len(err.replace(str(split), "RUN")) < 400
    assert pretrain.main(open_ended_argv(train_files, split, *RESUMED, "--resume")) == 0  # untouched by the refusals


def test_a_resume_with_max_steps_below_the_checkpoint_is_refused_before_the_data(train_files, interrupted, capsys):
    """--resume with --max-steps below the checkpoint's step said only "options differ: max_steps 6 -> 3", trained
    nothing and wrote the checkpoint's weights as the finished run. Now it is refused before the data is read,
    naming both steps and how to go on; the folder is left as it was."""
    _, split = interrupted  # checkpoints at steps 4 and 5
    before = sorted(p.name for p in split.rglob("*"))
    assert pretrain.main(open_ended_argv(train_files, split, *RESUMED, "--max-steps", "3", "--resume")) == \
        runtime.EXIT_USER_ERROR
    out, err = capsys.readouterr()
    assert "training rows" not in out
    assert err.strip().splitlines()[-1] == (
        f"error: --resume: the checkpoint {split / checkpointing.CHECKPOINTS / 'step-00000005'} is at step 5 and "
        "--max-steps 3 is below it, so nothing would be trained: resume with --max-steps 5 or more (the run's own, "
        "to end it as planned), or choose another --out for a new run"), err
    assert sorted(p.name for p in split.rglob("*")) == before
    assert pretrain.main(open_ended_argv(train_files, split, *RESUMED, "--resume")) == 0


def test_a_resume_with_a_length_below_the_checkpoint_is_refused(train_files, interrupted, capsys):
    """--resume with an --epochs or --token-budget that ends the run before the checkpoint's step trained nothing
    and saved the checkpoint's weights as the finished run, as a lower --max-steps did; refused too, once the data
    says how many steps the options make, and the folder is left as it was."""
    _, split = interrupted  # checkpoints at steps 4 and 5
    before = sorted(p.name for p in split.rglob("*"))
    unbounded = [arg for arg in RESUMED if arg not in ("--max-steps", "6")]
    for length in (["--token-budget", "1"], ["--epochs", "0.001"]):
        assert pretrain.main(open_ended_argv(train_files, split, *unbounded, *length, "--resume")) == \
            runtime.EXIT_USER_ERROR
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err == (f"error: --resume: the checkpoint {split / checkpointing.CHECKPOINTS / 'step-00000005'} is "
                       "at step 5, and this command's length options end the run at step 1, so nothing would be "
                       "trained: resume with the run's own --epochs or --token-budget, or choose another --out for "
                       "a new run"), err
        assert sorted(p.name for p in split.rglob("*")) == before
    assert pretrain.main(open_ended_argv(train_files, split, *RESUMED, "--resume")) == 0


def test_truncated_checkpoint_on_resume_falls_back_to_the_previous_one(train_files, interrupted, capsys):
    # issue 13: a truncated checkpoint gave a 31-line traceback without the file name, and exit code 1
    full, split = interrupted
    root = split / checkpointing.CHECKPOINTS  # step-00000004 and step-00000005: the previous one kept
    damaged = root / "step-00000005" / "model.safetensors"
    damaged.write_bytes(damaged.read_bytes()[:1000])

    assert pretrain.main(open_ended_argv(train_files, split, *RESUMED, "--resume", "--keep-checkpoints")) == 0
    err = capsys.readouterr().err
    assert f"{damaged}: unreadable (truncated or corrupt?)" in err
    assert "falling back to the previous checkpoint" in err and "step-00000004" in err and "Traceback" not in err
    assert (root / "bad-step-00000005" / "model.safetensors").is_file()  # moved aside, not deleted
    a, b = weights(full), weights(split)  # resumed from step 4: still the uninterrupted run's result
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert train_losses(full) == train_losses(split)


def test_a_resumed_log_entry_averages_its_whole_window(train_files, interrupted):
    """Stopped at step 4 of a run logging every 3 steps, the resumed run's step-6 entry averaged steps 5-6 alone
    under the label of a 3-step mean: the window's running sums are checkpointed with the run (here stopped at
    step 5: the entry is the mean of steps 4-6)."""
    full, split = interrupted
    assert pretrain.main(open_ended_argv(train_files, split, *RESUMED, "--resume")) == 0
    assert [step for step, _ in train_losses(full)] == [3, 6]
    assert train_losses(split) == train_losses(full)


def test_a_resumed_run_counts_the_wall_time_of_its_earlier_sessions(train_files, tmp_path, monkeypatch):
    """After --resume, metrics.json's wall_time_s covered only the last session (train_time_s 43.2 s, wall_time_s
    31.9 s), and train.ablation summed it as every run's wall time: a checkpoint carries the run's wall time, from
    the script's start (`started`), and the resumed trainer counts on from it (`previous_wall_s`, `wall_time_s`)."""
    seen = []
    init, fit = trainer.Trainer.__init__, trainer.Trainer.fit

    def started_earlier(self, *args, started=None, **kwargs):  # a script that spent 100 s more before its loop
        init(self, *args, **kwargs, started=(started or time.time()) - 100)

    def spy(self):
        previous = self.previous_wall_s
        result = fit(self)
        seen.append((previous, self.wall_time_s(), time.time() - self.started))
        return result

    monkeypatch.setattr(trainer.Trainer, "__init__", started_earlier)
    monkeypatch.setattr(trainer.Trainer, "fit", spy)
    out = tmp_path / "run"
    with monkeypatch.context() as m:
        interrupt_at(m, 3)
        assert pretrain.main(open_ended_argv(train_files, out, "--max-steps", "5")) == runtime.EXIT_INTERRUPTED
    _, state = checkpointing.Checkpoints.load(checkpointing.Checkpoints(out).latest(), trainer_state=True)
    assert state["wall_s"] >= 100 + state["elapsed"] > 100  # the whole session to its checkpoint, its start included
    assert pretrain.main(open_ended_argv(train_files, out, "--max-steps", "5", "--resume")) == 0
    (first, _, _), (previous, total, session) = seen
    assert first == 0 and previous == state["wall_s"]  # the first session's, as its checkpoint says
    assert total == pytest.approx(state["wall_s"] + session, abs=0.5) and session >= 100


def test_a_trainer_state_loads_on_the_cpu_whatever_the_training_device(tmp_path, monkeypatch):
    # on a GPU, mapping trainer.pt to the device made its RNG states CUDA tensors, which torch.set_rng_state and
    # Generator.set_state refuse: --resume broke there. (Without CUDA the old code failed to load at all.)
    masker_rng = torch.Generator().manual_seed(3).get_state()
    state = {"step": 1, "tokens": 8, "epoch": 0, "batch_in_epoch": 1, "elapsed": 0.5, "args": {},
             "optimizer": optim.make_optimizer(torch.nn.Linear(2, 2), 1e-3, 0.0).state_dict(),
             "rng": runtime.rng_state(), "task": {"masker": {"generator": masker_rng}}}
    path = checkpointing.Checkpoints(tmp_path).save("step", 1, {"w": torch.ones(2)}, state)
    monkeypatch.setattr(checkpointing, "load_file", lambda file, device: {"w": torch.ones(2)})  # no CUDA here
    _, loaded = checkpointing.Checkpoints.load(path, device="cuda", trainer_state=True)
    tensors = [loaded["rng"]["torch"], loaded["rng"]["numpy"]["keys"], loaded["task"]["masker"]["generator"]]
    assert all(t.device.type == "cpu" for t in tensors)
    runtime.set_rng_state(loaded["rng"])  # what --resume does with them
    torch.Generator().set_state(loaded["task"]["masker"]["generator"])


def simulated_gpus(monkeypatch, count: int, seed: int = 0) -> tuple[torch.Generator, ...]:
    """`count` CUDA devices on this CPU-only build, as far as their random generators go: CPU generators stand in
    for torch.cuda.default_generators, all seeded alike (as `seed_everything` seeds them), and CUDA is initialised
    (the trainer moved the model to the device before it resumes)."""
    generators = tuple(torch.Generator().manual_seed(seed) for _ in range(count))
    monkeypatch.setattr(torch.cuda, "default_generators", generators)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for module in (torch.cuda, torch.cuda.random):
        monkeypatch.setattr(module, "is_initialized", lambda: True)
        monkeypatch.setattr(module, "device_count", lambda: count)
        monkeypatch.setattr(module, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda.random, "_lazy_init", lambda: None)
    return generators


def drawn_state(seed: int, draws: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    torch.rand(draws, generator=generator)
    return generator.get_state()


def test_a_gpu_checkpoint_resumes_on_a_machine_that_shows_fewer_gpus(monkeypatch):
    # a one-process run on a two-GPU workstation (it computes on cuda:0), resumed with one GPU visible: the
    # checkpoint kept every visible GPU's generator and restoring them all raised IndexError, a traceback
    cuda0 = torch.device("cuda", 0)
    torch.rand(5, generator=simulated_gpus(monkeypatch, 2, seed=7)[0])
    saved = runtime.rng_state(cuda0)
    assert torch.equal(saved["cuda"], drawn_state(7, 5))  # the device the run used, alone
    one_gpu = simulated_gpus(monkeypatch, 1, seed=7)
    runtime.set_rng_state(saved, cuda0)
    assert torch.equal(one_gpu[0].get_state(), drawn_state(7, 5))
    # a checkpoint from before, with one state per GPU of its machine: the run's own device's, else the first
    before = {**runtime.rng_state(), "cuda": [drawn_state(7, 3), drawn_state(7, 4)]}
    runtime.set_rng_state(before, cuda0)
    assert torch.equal(one_gpu[0].get_state(), drawn_state(7, 3))
    two_gpus = simulated_gpus(monkeypatch, 2, seed=7)
    runtime.set_rng_state(before, torch.device("cuda", 1))
    assert torch.equal(two_gpus[1].get_state(), drawn_state(7, 4)) and torch.equal(two_gpus[0].get_state(),
                                                                                   drawn_state(7, 0))
    runtime.set_rng_state({**before, "cuda": [drawn_state(7, 2)]}, torch.device("cuda", 1))
    assert torch.equal(two_gpus[1].get_state(), drawn_state(7, 2))
    # and on the CPU a GPU run's generator has no place; a CPU run's checkpoint leaves the GPU's as seeded
    runtime.set_rng_state(saved, torch.device("cpu"))
    runtime.set_rng_state(runtime.rng_state(), torch.device("cuda", 1))
    assert torch.equal(two_gpus[1].get_state(), drawn_state(7, 2))


def test_no_readable_checkpoint_is_a_user_error_naming_the_files(train_files, interrupted, capsys):
    _, out = interrupted
    for folder in (out / checkpointing.CHECKPOINTS).iterdir():
        (folder / "trainer.pt").write_bytes(b"PK\x03\x04 not a whole zip")
    assert pretrain.main(open_ended_argv(train_files, out, *RESUMED, "--resume")) == runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: no readable checkpoint") and "step-00000005/trainer.pt" in last
    assert "step-00000004/trainer.pt" in last and "Traceback" not in err


def test_a_checkpoint_that_does_not_read_back_is_not_kept(train_files, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    real_save = checkpointing.save_file
    calls = []

    def silently_short_save(tensors, filename, *args, **kwargs):  # e.g. a full disk that does not say so
        real_save(tensors, filename, *args, **kwargs)
        calls.append(filename)
        if len(calls) == 2:
            Path(filename).write_bytes(Path(filename).read_bytes()[:500])

    monkeypatch.setattr(checkpointing, "save_file", silently_short_save)
    code = pretrain.main(open_ended_argv(train_files, out, "--max-steps", "6", "--save-every", "2"))
    assert code == runtime.EXIT_USER_ERROR and "model.safetensors: unreadable" in capsys.readouterr().err
    assert [p.name for p in (out / checkpointing.CHECKPOINTS).iterdir()] == ["step-00000002"]  # the good one stays


class FileSystemCalls:
    """`os` as `train.checkpointing` sees it, recording what it opens and flushes; `windows`: as Windows answers
    (the portability review's emulation): `os.open` of a folder is EACCES (CreateFile without
    FILE_FLAG_BACKUP_SEMANTICS), `os.fsync` of a read-only descriptor EBADF (FlushFileBuffers needs a handle that
    may write)."""

    def __init__(self, windows: bool):
        self.windows, self.read_only, self.flushed = windows, {}, []

    def __getattr__(self, name):
        return getattr(os, name)

    def open(self, path, flags, *args, **kwargs):
        if self.windows and os.path.isdir(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        fd = os.open(path, flags, *args, **kwargs)
        if flags & (os.O_WRONLY | os.O_RDWR) == 0:
            self.read_only[fd] = Path(path)
        return fd

    def close(self, fd):
        self.read_only.pop(fd, None)
        os.close(fd)

    def fsync(self, fd):
        if self.windows and fd in self.read_only:
            raise OSError(errno.EBADF, "Bad file descriptor")
        self.flushed.append(self.read_only.get(fd, "a file open for writing"))
        os.fsync(fd)


@pytest.mark.parametrize("windows", [False, True], ids=["posix", "windows"])
def test_a_checkpoint_is_flushed_to_disk_as_each_platform_allows(tmp_path, monkeypatch, windows):
    """On Windows every training run failed at its first checkpoint ("error: [Errno 9] Bad file descriptor", then
    "[Errno 13] Permission denied" on the temporary folder): the files were flushed through read-only descriptors,
    and the folders opened to be flushed. There the files are flushed through handles that may write, and the
    folders not at all; on POSIX each file, the temporary folder and the checkpoints folder (what makes the rename
    durable) are flushed as before."""
    calls = FileSystemCalls(windows)
    monkeypatch.setattr(checkpointing, "os", calls)
    monkeypatch.setattr(runtime, "WINDOWS", windows)
    ckpts = checkpointing.Checkpoints(tmp_path / "run")
    final = ckpts.save("step", 3, {"w": torch.ones(2)}, extra_json={"step": 3})
    assert torch.equal(ckpts.load(final)[0]["w"], torch.ones(2))
    files = ["info.json", "model.safetensors"]
    if windows:
        assert calls.flushed == ["a file open for writing"] * len(files)
    else:
        tmp = ckpts.root / f".tmp-step-00000003-{os.getpid()}"
        assert sorted(calls.flushed[:-2]) == [tmp / name for name in files]
        assert calls.flushed[-2:] == [tmp, ckpts.root]


def test_exit_codes_are_documented(capsys):
    for module in (pretrain, finetune):
        with pytest.raises(SystemExit):
            module.main(["--help"])
        text = capsys.readouterr().out
        assert "exit codes:" in text and "130" in text and "user error" in text


def test_inputs_longer_than_the_position_table_are_refused(train_files, tmp_path, tiny_mlm_dir, capsys):
    # issue 13: --max-length 100000 was accepted; the first step then ignored SIGTERM/SIGINT for 14 minutes
    argv = open_ended_argv(train_files, tmp_path / "a", "--max-steps", "1", "--model-max-length", "100000")
    assert pretrain.main(argv) == 2
    assert "--model-max-length must be between 3 and 512 (RoBERTa's longest input" in capsys.readouterr().err
    # the same check builds finetune's --init random model
    args = pretrain.parse_args(["--preset", "mini", "--model-max-length", "513"])
    with pytest.raises(runtime.UserError, match="between 3 and 512"):
        args.model_config(None)
    args.model_max_length = 512
    assert args.model_config(None).max_position_embeddings == 514
    # rows longer than the model takes are refused, with or without --init; --seq-length is --max-length's old name
    assert pretrain.main(open_ended_argv(train_files, tmp_path / "b", "--max-steps", "1", "--max-length", "33")) == 2
    assert "--max-length must be between 8 and the model's longest input 32" in capsys.readouterr().err
    init = open_ended_argv(train_files, tmp_path / "c", "--max-steps", "1", "--init", str(tiny_mlm_dir))
    init.remove("--model-max-length"), init.remove("32")
    assert pretrain.main([*init, "--seq-length", "100000"]) == 2
    err = capsys.readouterr().err
    assert "--seq-length is deprecated; use --max-length" in err
    assert "--max-length must be between 8 and the model's longest input 64" in err


def test_missing_tokenizer_and_non_utf8_corpus_are_one_line_errors(train_files, tmp_path, capsys):
    argv = open_ended_argv(train_files, tmp_path / "out", "--max-steps", "1")
    missing = tmp_path / "missing.json"
    argv[argv.index("--tokenizer") + 1] = str(missing)
    assert pretrain.main(argv) == runtime.EXIT_USER_ERROR
    assert capsys.readouterr().err == f"error: --tokenizer {missing}: no such tokenizer file\n"
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes("A line.\nCaf\xe9.\n".encode("latin-1"))
    argv = open_ended_argv(train_files, tmp_path / "out", "--max-steps", "1")
    argv[argv.index("--corpus") + 1] = str(corpus)
    assert pretrain.main(argv) == runtime.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.startswith(f"error: --corpus {corpus} line 2: not UTF-8 text") and err.count("\n") == 1


def test_an_mlm_batchs_loss_sum_is_its_cross_entropy_summed_over_the_masked_targets(tiny_config, tokenizer,
                                                                                   sentences):
    """`MLMTask.loss_sum` of a batch the masker drew (what the trainer divides by `num_targets` and sums over
    micro-batches): the cross-entropy summed over exactly the positions whose label is not ignored, that is the
    model's mean loss times their number; a slice with no target adds 0 (a zero gradient)."""
    import torch.nn.functional as F

    from train.packing import pack_sequences

    torch.manual_seed(0)
    model = roberta.RobertaForMaskedLM(tiny_config).eval()
    rows = pack_sequences(sentences[:40], tokenizer, 32)
    task = pretrain.MLMTask(rows, roberta.DynamicMasker.from_tokenizer(tokenizer, seed=0),
                            pad_id=tiny_config.pad_token_id)
    batch = task.make_batch(torch.arange(4), epoch=0)
    labels = batch["labels"]
    targets = labels.ne(roberta.IGNORE_INDEX)
    assert 0 < int(targets.sum()) < labels.numel()
    with torch.no_grad():
        summed = task.loss_sum(model, batch).item()
        logits = model(input_ids=batch["input_ids"]).logits  # (B, T, V), every position
        mean = model(input_ids=batch["input_ids"], labels=labels).loss.item()
    assert summed == pytest.approx(F.cross_entropy(logits[targets], labels[targets], reduction="sum").item(),
                                   rel=1e-5)
    assert summed == pytest.approx(mean * int(targets.sum()), rel=1e-5)
    no_targets = {"input_ids": batch["input_ids"], "labels": torch.full_like(labels, roberta.IGNORE_INDEX)}
    assert task.loss_sum(model, no_targets).item() == 0


# ----- divergence -----
def test_nan_loss_stops_without_saving(train_files, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    real_loss = pretrain.MLMTask.loss_sum
    steps = []

    def loss_sum(self, model, batch):
        steps.append(1)
        loss = real_loss(self, model, batch)
        return loss * float("nan") if len(steps) >= 3 else loss

    monkeypatch.setattr(pretrain.MLMTask, "loss_sum", loss_sum)
    code = pretrain.main(open_ended_argv(train_files, out, "--max-steps", "10", "--save-every", "1"))
    assert code == runtime.EXIT_DIVERGED
    err = capsys.readouterr().err
    assert "loss became nan at step 3" in err
    assert "last good checkpoint:" in err and "step-00000002" in err
    assert "Traceback" not in err
    assert checkpointing.Checkpoints(out).latest().name == "step-00000002"  # nothing written after the nan
    assert not (out / "model.safetensors").exists()
    _, state = checkpointing.Checkpoints.load(checkpointing.Checkpoints(out).latest())
    assert all(torch.isfinite(v).all() for s in state["optimizer"]["state"].values() for v in s.values())


def test_a_run_that_diverged_before_its_first_checkpoint_says_how_to_start_again(train_files, tmp_path, monkeypatch,
                                                                                  capsys):
    """A nan at the first step leaves a log and no checkpoint: the same command was told "pass --resume to
    continue it", and --resume then said there was nothing to continue; now both say what happens."""
    out = tmp_path / "run"
    real_loss = pretrain.MLMTask.loss_sum
    monkeypatch.setattr(pretrain.MLMTask, "loss_sum",
                        lambda self, model, batch: real_loss(self, model, batch) * float("nan"))
    argv = open_ended_argv(train_files, out, "--max-steps", "3", "--eval-every", "2")  # the start's evaluation: a log
    assert pretrain.main(argv) == runtime.EXIT_DIVERGED
    assert (out / "log.jsonl").exists() and not (out / "checkpoints").exists()
    capsys.readouterr()
    monkeypatch.setattr(pretrain.MLMTask, "loss_sum", real_loss)
    assert pretrain.main(open_ended_argv(train_files, out, "--max-steps", "3")) == runtime.EXIT_USER_ERROR
    assert "stopped before its first checkpoint" in capsys.readouterr().err
    assert pretrain.main(open_ended_argv(train_files, out, "--max-steps", "3", "--resume")) == 0
    assert "no checkpoint" in capsys.readouterr().err and (out / "model.safetensors").exists()


def updates_to_inf(monkeypatch) -> None:
    """Every optimizer step leaves its first parameter infinite, after a finite loss and finite gradients."""
    real_step = torch.optim.AdamW.step

    def step(self, *args, **kwargs):
        result = real_step(self, *args, **kwargs)
        with torch.no_grad():
            self.param_groups[0]["params"][0].fill_(float("inf"))
        return result

    monkeypatch.setattr(torch.optim.AdamW, "step", step)


def test_non_finite_weights_after_the_last_step_stop_without_saving(train_files, tmp_path, monkeypatch, capsys):
    # the last step's loss and gradients are finite but its update is not: no later step would notice
    out = tmp_path / "run"
    updates_to_inf(monkeypatch)
    code = pretrain.main(open_ended_argv(train_files, out, "--max-steps", "1"))
    assert code == runtime.EXIT_DIVERGED
    err = capsys.readouterr().err
    assert "weights became non-finite" in err and "at step 1" in err and "Traceback" not in err
    assert not (out / "model.safetensors").exists() and not (out / "metrics.json").exists()


def test_finite_but_broken_weights_stop_at_the_held_out_loss_without_saving(train_files, tmp_path, monkeypatch,
                                                                          capsys):
    # one step at a huge lr leaves the weights finite (near 1e30) and the held-out loss nan: the run's last step,
    # so no later training loss would show it; this is what a loaded machine made of the GPU session's diverging try
    out = tmp_path / "run"
    real_step = torch.optim.AdamW.step

    def step(self, *args, **kwargs):
        result = real_step(self, *args, **kwargs)
        with torch.no_grad():
            for p in self.param_groups[0]["params"]:
                p.fill_(1e30)
        return result

    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    code = pretrain.main(open_ended_argv(train_files, out, "--max-steps", "1"))
    assert code == runtime.EXIT_DIVERGED
    err = capsys.readouterr().err
    assert "held-out loss became nan at step 1" in err and "Traceback" not in err
    assert not (out / "model.safetensors").exists() and not (out / "metrics.json").exists()


def test_an_infinite_held_out_loss_stops_without_saving(train_files, tmp_path, monkeypatch, capsys):
    # not only nan: a held-out loss of +inf is no model to save either
    from train import evaluate

    real = evaluate.evaluate_masked
    monkeypatch.setattr(evaluate, "evaluate_masked", lambda *a, **k: {**real(*a, **k), "loss": float("inf")})
    out = tmp_path / "run"
    assert pretrain.main(open_ended_argv(train_files, out, "--max-steps", "1")) == runtime.EXIT_DIVERGED
    err = capsys.readouterr().err
    assert "held-out loss became inf at step 1" in err and "Traceback" not in err
    assert not (out / "model.safetensors").exists() and not (out / "metrics.json").exists()


def test_a_checkpoint_never_holds_non_finite_weights(train_files, tmp_path, monkeypatch, capsys):
    # a periodic save (as --save-every-min's, and the one a SIGTERM makes) comes without an evaluation: its own
    # check keeps non-finite weights out of the checkpoint that the error message then offers to --resume from
    out = tmp_path / "run"
    updates_to_inf(monkeypatch)
    code = pretrain.main(open_ended_argv(train_files, out, "--max-steps", "3", "--save-every", "1"))
    assert code == runtime.EXIT_DIVERGED
    err = capsys.readouterr().err
    assert "weights became non-finite" in err and "at step 1" in err and "last good checkpoint: none" in err
    assert not list(out.rglob("model.safetensors"))


# ----- signals, in a real subprocess -----
@pytest.mark.slow  # end-to-end script run, several seconds
def test_sigterm_saves_checkpoint_and_exits_cleanly(train_files, tmp_path):
    out = tmp_path / "run"
    argv = open_ended_argv(train_files, out, "--max-steps", "100000", "--log-every", "1")
    proc = subprocess.Popen([sys.executable, "-m", "train.pretrain", *argv], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not ((out / "log.jsonl").exists() and (out / "log.jsonl").read_text().strip()):
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline, "training did not start"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode in (0, 130), stderr
    assert "SIGTERM" in stderr and "checkpoint saved" in stderr
    assert "Traceback" not in stderr
    latest = checkpointing.Checkpoints(out).latest()
    _, state = checkpointing.Checkpoints.load(latest)
    assert state["step"] == checkpointing.Checkpoints.step_of(latest) >= 1


@pytest.mark.parametrize("where", ["closing evaluation", "last checkpoint"])
def test_a_signal_after_the_last_step_stops_the_run_and_resume_finishes_it(train_files, tmp_path, monkeypatch, capsys,
                                                                           where):
    """SIGTERM (a scheduler's deadline, gpu_session's) in the closing evaluation of fit, or while the last step's
    checkpoint was saved, was taken by the trainer's handler ("saving a checkpoint after this step") and then
    ignored: the evaluation ran on (84 s on a large held-out set), then the final evaluation and folder, exit code 0.
    Now the closing evaluation is cut short, the last step's checkpoint is saved (its `stopped_by` "done": every
    step ran), the run ends interrupted (130) with no final folder, and --resume evaluates again and finishes it."""
    from train import evaluate

    out = tmp_path / "run"
    argv = open_ended_argv(train_files, out, "--max-steps", "2", "--log-every", "1")  # --eval-every 0: one closing eval
    calls, sent, evaluate_masked, save = [], [], evaluate.evaluate_masked, checkpointing.Checkpoints.save

    def signalled_evaluation(*args, **kwargs):
        calls.append("started")
        if where == "closing evaluation" and len(calls) == 1:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # a long evaluation, which the signal should cut short
            calls.append("finished")
        return evaluate_masked(*args, **kwargs)

    def signalled_save(self, kind, step, *args, **kwargs):
        if where == "last checkpoint" and kind == "step" and not sent:
            sent.append(step)
            os.kill(os.getpid(), signal.SIGTERM)
        return save(self, kind, step, *args, **kwargs)

    monkeypatch.setattr(evaluate, "evaluate_masked", signalled_evaluation)  # what pretrain imports when it runs
    monkeypatch.setattr(checkpointing.Checkpoints, "save", signalled_save)
    started = time.monotonic()
    assert pretrain.main(argv) == runtime.EXIT_INTERRUPTED
    assert time.monotonic() - started < 60
    err = capsys.readouterr().err
    assert "SIGTERM" in err and "interrupted after the last step (2)" in err and "--resume" in err, err
    assert "finished" not in calls and calls.count("started") == 1  # cut short; no final evaluation
    assert not (out / "metrics.json").exists() and not (out / "model.safetensors").exists()
    latest = checkpointing.Checkpoints(out).latest()
    _, state = checkpointing.Checkpoints.load(latest)
    assert latest.name == "step-00000002" and state["stopped_by"] == "done"
    evals = [e["step"] for e in reporting.read_log(out / "log.jsonl") if e["type"] == "eval"]
    assert evals == ([] if where == "closing evaluation" else [2])

    assert pretrain.main([*argv, "--resume"]) == 0
    assert "resumed from" in capsys.readouterr().err
    assert json.loads((out / "metrics.json").read_text())["stopped_by"] == "done"
    assert [e["step"] for e in reporting.read_log(out / "log.jsonl") if e["type"] == "eval"] == [2]  # once


# ----- several processes -----
@pytest.mark.slow
def test_two_process_ddp_matches_single_process(train_files, tmp_path, tiny_mlm_dir):
    """Two processes train the weights one process does. From known weights (--init) with a one-step warmup, so
    that 4 steps move them far beyond the comparison's tolerance (under a 300-step warmup, at most 1.3e-5 of lr:
    the weights' check was nearly vacuous)."""
    extra = ["--init", str(tiny_mlm_dir), "--max-steps", "4", "--warmup", "1", "--dropout", "0", "--lr", "1e-3",
             "--log-every", "1"]
    single, ddp = tmp_path / "single", tmp_path / "ddp"
    # both on the CPU, also on a machine with one GPU (two processes there would ask for two devices); torchrun's
    # log folders (torchelastic_*) in tmp_path, not left in the machine's temporary folder
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "",
           "TMPDIR": str(tmp_path)}
    for nproc, out in ((1, single), (2, ddp)):
        result = subprocess.run(  # --local-addr: the workers meet on loopback, not at the machine's hostname (a
            # fresh machine's may not resolve: then they retried it until the timeout)
            [sys.executable, "-m", "torch.distributed.run", "--standalone", "--local-addr", "127.0.0.1",
             "--nproc_per_node", str(nproc),
             "-m", "train.pretrain", *[a for a in open_ended_argv(train_files, out, *extra)
                                       if a not in ("--model-max-length", "32")]],  # the --init model's shape
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((ddp / "metrics.json").read_text())
    assert metrics["hardware"]["processes"] == 2
    losses_single, losses_ddp = train_losses(single), train_losses(ddp)
    assert [s for s, _ in losses_ddp] == [1, 2, 3, 4]
    assert all(math.isfinite(v) for _, v in losses_ddp)
    assert [v for _, v in losses_ddp] == pytest.approx([v for _, v in losses_single], abs=1e-4)
    a, b, start = weights(single), weights(ddp), weights(tiny_mlm_dir)
    assert a.keys() == b.keys() == start.keys()
    moved = {name: float((a[name] - start[name]).abs().max()) for name in a}
    assert sorted(moved.values())[len(moved) // 10] > 10 * 1e-4, moved  # nine tensors in ten: 10x the tolerance
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=1e-4, rtol=0, msg=name)


def test_more_processes_than_gpus_is_a_user_error(monkeypatch):
    # torchrun --nproc_per_node 2 on a one-GPU machine: one line that says what to do, not CUDA's
    # 'invalid device ordinal' (seen on the H100 of issue 16)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    with pytest.raises(runtime.UserError, match=r"shows 1: start one process per GPU \(torchrun --nproc_per_node 1\)"):
        runtime.init_distributed()


# ----- a run checkpointed by the code before issue 12 (tests/data/pre-issue12-run) -----
def test_resume_checkpoint_written_before_issue_12(tmp_path, capsys, monkeypatch, single_thread):
    """Resumed with today's code, a step-4 checkpoint of the old code ends with the old run's step-8 weights;
    its old command (where --max-length set a new model's shape) fails with a message naming the option. On one
    thread, as the fixture was written (`single_thread` restores the count after)."""

    fixture = ROOT / "tests" / "data" / "pre-issue12-run"
    shutil.copytree(fixture, tmp_path / "run-folder")
    monkeypatch.chdir(tmp_path / "run-folder")
    common = ["--corpus", "data/corpus.txt", "--valid", "data/valid.txt", "--tokenizer", "data/tokenizer.json",
              "--preset", "tiny",
              "--batch-size", "8", "--warmup", "2", "--lr", "2e-3", "--eval-every", "0", "--eval-rows", "8",
              "--final-eval-rows", "8", "--cache-dir", "", "--no-progress", "--precision", "fp32", "--max-steps", "8",
              "--save-every", "4", "--keep-checkpoints", "--out", "run", "--resume"]
    assert pretrain.main([*common, "--max-length", "32"]) == runtime.EXIT_USER_ERROR
    assert "add --model-max-length 32" in capsys.readouterr().err
    assert pretrain.main([*common, "--model-max-length", "32"]) == 0
    assert "resumed from run/checkpoints/step-00000004 (step 4" in capsys.readouterr().err
    expected = load_file(str(fixture / "expected-step-00000008.safetensors"))
    got = weights("run/checkpoints/step-00000008")
    assert got.keys() == expected.keys()
    for name in expected:
        torch.testing.assert_close(got[name], expected[name], rtol=0, atol=1e-6, msg=name)


@pytest.mark.slow
def test_compile_encoder_keeps_names_and_does_not_recompile_for_each_mask_count(tiny_config):
    """`--compile` compiles the encoder in place: the same parameter names (checkpoints, DDP), the eager model's
    loss and gradients, and no new graphs when the number of masked positions changes from batch to batch
    (compiling the whole model recompiled for each count until torch.compile gave up: phase 25)."""
    import copy

    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    eager = roberta.RobertaForMaskedLM(tiny_config).eval()  # no dropout (as in pretraining); gradients all the same
    compiled = copy.deepcopy(eager)
    trainer.compile_encoder(compiled, backend="aot_eager")  # dynamo's graphs, no C++ compiler needed
    assert list(compiled.state_dict()) == list(eager.state_dict())
    input_ids = torch.randint(5, tiny_config.vocab_size, (4, 16))
    graphs = []
    for count in (5, 9, 14, 20):  # a different number of targets every step
        labels = torch.full_like(input_ids, -100)
        where = torch.randperm(input_ids.numel())[:count]
        labels.view(-1)[where] = input_ids.view(-1)[where]
        losses = []
        for model in (eager, compiled):
            model.zero_grad()
            loss = model(input_ids, labels=labels, masked_only=True).loss
            loss.backward()
            losses.append(loss.detach())
        torch.testing.assert_close(losses[1], losses[0], rtol=1e-4, atol=1e-4)
        for (name, a), b in zip(eager.named_parameters(), compiled.parameters()):
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-3, atol=1e-5, msg=name)
        graphs.append(counters["stats"]["unique_graphs"])
    assert graphs[0] > 0 and graphs[-1] == graphs[0], graphs  # compiled once, for the first batch
    torch._dynamo.reset()


def test_no_progress_still_prints_a_line_now_and_then(train_files, tmp_path, monkeypatch, capsys):
    """--no-progress (the recipes' choice) left a log silent between evaluations for up to an hour: a plain
    progress line comes every HEARTBEAT_S seconds (here every step)."""
    monkeypatch.setattr(trainer, "HEARTBEAT_S", 0.0)
    draws, save = [], reporting.save_figure
    monkeypatch.setattr(reporting, "save_figure", lambda fig, path: draws.append(path) or save(fig, path))
    assert pretrain.main(open_ended_argv(train_files, tmp_path / "run", "--max-steps", "3", "--no-progress")) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("step ")]
    assert [line.split(":")[0] for line in lines] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    assert all("loss " in line and "tokens/s" in line for line in lines)
    assert draws == [tmp_path / "run" / "curves.png"]  # one evaluation, one figure (was three draws of it)


def test_a_torn_last_log_line_is_dropped_on_resume(train_files, interrupted, capsys):
    """A full disk (or a killed process) leaves half a line at the end of log.jsonl: --resume failed on it every
    time ("Expecting ',' delimiter", no file named). It is dropped with a warning; a bad line before the last
    is named with its file and line."""
    full, split = interrupted
    log = split / reporting.LOG_NAME
    with open(log, "a", encoding="utf-8") as f:
        f.write('{"type": "train", "step": 6, "tok')
    assert pretrain.main(open_ended_argv(train_files, split, *RESUMED, "--resume")) == 0
    assert "its last line was cut short" in capsys.readouterr().err
    assert train_losses(full) == train_losses(split)
    lines = log.read_text(encoding="utf-8").splitlines()
    log.write_text("\n".join([lines[0], "", "{not json", *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{log}: line 3 is not a log entry"):  # the file's line, blank ones counted
        reporting.read_log(log)


def test_curves_are_drawn_again_only_when_the_log_or_the_figure_changed(tmp_path, monkeypatch):
    """The trainer redraws curves.png after every evaluation, at the end of fit, then pretrain and finetune once
    more (5 draws in a short fine-tuning run, 60% of its time): a log unchanged since the trainer drew it, with the
    figure still there, is not drawn again."""
    from types import SimpleNamespace

    log, png = tmp_path / "log.jsonl", tmp_path / "curves.png"
    draws, save = [], reporting.save_figure
    monkeypatch.setattr(reporting, "save_figure", lambda fig, path: draws.append(path) or save(fig, path))
    run = SimpleNamespace(dist=SimpleNamespace(is_main=True), out=tmp_path, _curves_drawn_from=None)
    reporting.append_log(log, {"type": "train", "step": 1, "tokens": 8, "loss": 5.0})
    reporting.append_log(log, {"type": "eval", "step": 1, "tokens": 8, "loss": 5.5, "accuracy": 0.1})
    trainer.Trainer.write_curves(run)
    first = png.read_bytes()
    assert first[:4] == b"\x89PNG" and len(draws) == 1
    trainer.Trainer.write_curves(run)  # nothing new
    assert len(draws) == 1 and png.read_bytes() == first
    reporting.append_log(log, {"type": "train", "step": 2, "tokens": 16, "loss": 4.0})
    trainer.Trainer.write_curves(run)  # a new entry
    drawn = png.read_bytes()
    assert len(draws) == 2 and drawn != first
    png.unlink()
    trainer.Trainer.write_curves(run)  # the figure removed
    assert len(draws) == 3 and png.read_bytes() == drawn  # the same log, the same figure


def test_the_averaged_runs_curves_tell_the_runs_apart_without_colour(tmp_path, monkeypatch):
    """The seeds' curves differed by colour alone (matplotlib's default cycle, one marker for all), and seeds 1 and
    2 (orange, green) are hard to tell apart for a protanope: each run has its own marker and line style too, in
    both panels."""
    drawn = []
    monkeypatch.setattr(reporting, "save_figure", lambda fig, path: drawn.append(fig))
    members = []
    for seed in range(4):
        log = tmp_path / f"s{seed}" / "log.jsonl"
        log.parent.mkdir()
        for step in range(1, 40):
            reporting.append_log(log, {"type": "train", "step": step, "tokens": 8 * step, "loss": 5.0 - step / 10})
        reporting.append_log(log, {"type": "eval", "step": 39, "tokens": 312, "loss": 1.5, "accuracy": 0.5})
        members.append((f"run-s{seed}", log))
    assert reporting.plot_member_curves(members, tmp_path / "curves.png")
    for ax in drawn[0].axes:
        runs = [line for line in ax.get_lines() if line.get_label().startswith("run-s")]
        assert len(runs) == 4 and all(line.get_marker() not in ("", "None", None) for line in runs)
        assert len({(line.get_marker(), line.get_linestyle()) for line in runs}) == 4
        assert len({line.get_linestyle() for line in runs}) > 1 and len({line.get_color() for line in runs}) == 4


def cie_lab(colour) -> tuple[float, float, float]:
    """`colour` in CIE L*a*b* (D65 white), where the distance between two colours is how far apart they look."""
    r, g, b = linear_rgb(colour)
    xyz = [(0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883]
    fx, fy, fz = (t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def test_every_line_colour_stands_out_on_white_and_from_the_others():
    """The lines of a figure with one per run, probe or arm (`reporting.line_style`, `arm_style`) took Okabe and
    Ito's orange (#E69F00) and sky blue (#56B4E9), at 2.2:1 and 2.3:1 against white, under the 3:1 that WCAG 1.4.11
    asks of the graphics one needs to read a figure: every colour is at least 3:1 against white, and no two look
    alike (at least 30 apart in CIE L*a*b*: the darkened orange is not a second vermillion, nor the sky blue a
    second blue)."""
    import itertools

    colours = reporting.LINE_COLOURS
    assert len(set(colours)) == len(colours)
    for colour in colours:
        assert contrast_with_white(colour) >= 3.0, (colour, round(contrast_with_white(colour), 2))
    for a, b in itertools.combinations(colours, 2):
        assert math.dist(cie_lab(a), cie_lab(b)) >= 30, (a, b, round(math.dist(cie_lab(a), cie_lab(b)), 1))


def test_a_runs_curves_tell_the_lines_apart_without_colour(tmp_path, monkeypatch):
    """curves.png told the training loss from the held-out loss by colour (matplotlib's blue and orange, both
    solid; the held-out line's 3-pixel dots the only other cue), and its orange stood at 2.5:1 against white: each
    line has its own line style and marker, the legend shows them, every line is at least 3:1 against white and the
    two differ in grey, and the held-out lines look alike in both panels (one meaning, one look)."""
    from matplotlib.colors import to_hex
    from PIL import ImageColor

    drawn = []
    monkeypatch.setattr(reporting, "save_figure", lambda fig, path: drawn.append(fig))
    log = tmp_path / "log.jsonl"
    for step in range(1, 41):
        reporting.append_log(log, {"type": "train", "step": step, "tokens": 8 * step, "loss": 5.0 - step / 10})
        if step % 10 == 0:
            reporting.append_log(log, {"type": "eval", "step": step, "tokens": 8 * step, "loss": 5.2 - step / 10,
                                       "accuracy": step / 100})
    reporting.plot_curves(log, tmp_path / "curves.png")
    loss_ax, eval_ax = drawn[0].axes
    lines = {line.get_label(): line for ax in (loss_ax, eval_ax) for line in ax.get_lines()}
    assert set(lines) == {"train loss", "eval loss", "eval accuracy"}

    def look(line):
        return line.get_linestyle(), line.get_marker() if line.get_marker() not in ("", "None", None) else None

    train, held_out = lines["train loss"], lines["eval loss"]
    assert look(train)[0] != look(held_out)[0] and look(held_out)[1] is not None, (look(train), look(held_out))
    assert held_out.get_markersize() >= 4  # a shape one can see, not a dot
    grey = [ImageColor.getcolor(to_hex(line.get_color()), "L") for line in (train, held_out)]
    assert abs(grey[0] - grey[1]) >= 60, grey  # apart in a greyscale print too (PIL's own conversion)
    accuracy = lines["eval accuracy"]
    assert look(accuracy) == look(held_out) and accuracy.get_color() == held_out.get_color()
    for ax in (loss_ax, eval_ax):
        shown = ax.get_legend()
        assert [look(handle) for handle in shown.get_lines()] == [look(line) for line in ax.get_lines()]
        assert [text.get_text() for text in shown.get_texts()] == [line.get_label() for line in ax.get_lines()]
    for label, line in lines.items():
        assert contrast_with_white(line.get_color()) >= 3, (label, line.get_color())


def test_a_log_that_cannot_be_written_names_the_file_and_the_way_on(tmp_path, monkeypatch):
    """A full disk was "[Errno 28] No space left on device", naming no file and not saying --resume. The way on
    said "--resume (from its last checkpoint)" before the run had one: it says so only when there is one, and in
    an experiment's step, the experiment's own way on."""
    with pytest.raises(OSError, match=r"could not write /dev/full \(No space left on device\): free some space, "
                                      r"then run the same command again with --resume \(no checkpoint was written "
                                      r"yet: the run starts over\)$"):
        reporting.append_log(Path("/dev/full"), {"type": "train", "step": 1})
    (tmp_path / reporting.LOG_NAME).mkdir()  # a log that cannot be opened
    checkpointing.Checkpoints(tmp_path).save("step", 1, {"w": torch.ones(2)})
    with pytest.raises(OSError, match=r"\(Is a directory\): run the same command again with --resume \(it goes on "
                                      r"from its last checkpoint\)$"):
        reporting.append_log(tmp_path / reporting.LOG_NAME, {"type": "train", "step": 2})
    monkeypatch.setenv(reporting.RESUME_HINT_ENV, "run the recipe again to continue (no --resume needed)")
    with pytest.raises(OSError, match=r"\(Is a directory\): run the recipe again to continue \(no --resume needed\)$"):
        reporting.append_log(tmp_path / reporting.LOG_NAME, {"type": "train", "step": 2})


def test_a_run_whose_first_log_line_fails_starts_over_with_resume(train_files, tmp_path, monkeypatch, capsys):
    """Before the first checkpoint, the way on the message gives works: the same command with --resume starts the
    run over (without it, the command refuses the folder that holds the run's log)."""
    def full_disk(path, mode, **kwargs):  # (append_log's open)
        Path(path).touch()  # the file is made, its line never written
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(reporting, "open", full_disk, raising=False)
    argv = open_ended_argv(train_files, tmp_path / "run", "--max-steps", "2")
    assert pretrain.main(argv) == runtime.EXIT_USER_ERROR
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("the run starts over)")
    monkeypatch.undo()
    assert pretrain.main(argv) == runtime.EXIT_USER_ERROR  # the folder holds the run's log
    assert pretrain.main([*argv, "--resume"]) == 0


@pytest.mark.parametrize("terminal", [False, True])
def test_no_progress_bar_without_a_terminal(train_files, tmp_path, monkeypatch, capsys, terminal):
    """A log file or a pipe got every redraw of the bar (carriage returns: one endless line); without a
    terminal the run writes its plain progress lines instead, as with --no-progress. On a terminal: the bar."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)  # pytest's capture, either way
    monkeypatch.setattr(trainer, "HEARTBEAT_S", 0.0)  # a plain line after every step when there is no bar
    assert runtime.progress_bars() is terminal and not runtime.progress_bars(no_progress=True)
    argv = open_ended_argv(train_files, tmp_path / "run", "--max-steps", "2")
    argv.remove("--no-progress")
    assert pretrain.main(argv) == 0
    err = capsys.readouterr().err
    plain = [line.split(":")[0] for line in err.splitlines() if line.startswith("step ")]
    if terminal:
        assert "\r" in err and "train: 100%" in err and "2/2" in err and not plain  # tqdm's bar
    else:
        assert "\r" not in err and plain == ["step 1 of 2", "step 2 of 2"]


def test_write_atomic_never_shares_or_leaves_a_temporary_file(tmp_path):
    """roberta.files.write_atomic, how roberta, train/ and scripts/ write a file in one step: the temporary file
    beside it holds the process id (log.jsonl was truncated through a fixed log.tmp, which a second process
    shares), and a failed write leaves neither it nor a changed file."""
    from roberta.files import write_atomic

    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"type": "train", "step": s}) + "\n" for s in (1, 2, 3)))
    (tmp_path / "log.tmp").write_text("another process")  # mid-write
    reporting.truncate_log(log, 2)
    assert ([e["step"] for e in reporting.read_log(log)] == [1, 2]
            and (tmp_path / "log.tmp").read_text() == "another process")
    assert write_atomic(tmp_path / "a.bin", b"\x00\x01").read_bytes() == b"\x00\x01"
    assert write_atomic(tmp_path / "a.txt", "é\n").read_bytes() == "é\n".encode("utf-8")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "kept").write_text("")
    with pytest.raises(OSError):  # the rename onto a folder fails
        write_atomic(tmp_path / "folder", "text")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "a.txt", "folder", "log.jsonl", "log.tmp"]


def test_resume_without_a_checkpoint_restarts_beside_what_a_stopped_run_left(tmp_path):
    """A pretraining stopped after its loop leaves config.json and its tokenizer files beside its log (so that its
    last checkpoint exports); with its checkpoints gone, --resume refused the folder as "not empty (config.json,
    tokenizer_config.json)" where it used to start the run again. Without the log they are not a run's: refused."""
    out = tmp_path / "run"
    out.mkdir()
    for name in ("log.jsonl", "config.json", "tokenizer.json", "tokenizer_config.json"):
        (out / name).write_text("{}\n")
    out_folder.check_restart_out(out)  # the same run started again
    (out / "log.jsonl").unlink()
    with pytest.raises(runtime.UserError, match=r"is not empty \(config.json, tokenizer.json, tokenizer_config.json\)"):
        out_folder.check_restart_out(out)


# ----- the end of a run, its lock, and what a resume compares (review R) -----
def eval_steps(out):
    return [e["step"] for e in reporting.read_log(Path(out) / "log.jsonl") if e["type"] == "eval"]


def test_the_last_checkpoint_records_the_closing_evaluation_and_the_end(train_files, tmp_path, monkeypatch, capsys):
    """Step 2 saved in the loop (--save-every 2) and then evaluated (the closing evaluation): the save after the loop
    was skipped as "step 2 is saved already", so the last checkpoint said neither that the run finished (train.export
    called it "unknown") nor that step 2 was evaluated, and a --resume after a Ctrl-C in the final evaluation logged
    the step-2 evaluation twice. A log holding an evaluation its checkpoint does not know of (a kill after the log
    line) drops it on resume, so that it is made, and logged, once."""
    from train import evaluate

    out = tmp_path / "run"
    argv = open_ended_argv(train_files, out, "--max-steps", "2", "--save-every", "2", "--log-every", "1")
    calls, evaluate_masked = [], evaluate.evaluate_masked

    def final_interrupted(*args, **kwargs):  # the closing evaluation, then Ctrl-C in the script's final one
        calls.append(kwargs.get("progress"))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return evaluate_masked(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(evaluate, "evaluate_masked", final_interrupted)
        assert pretrain.main(argv) == runtime.EXIT_INTERRUPTED
    latest = checkpointing.Checkpoints(out).latest()
    _, state = checkpointing.Checkpoints.load(latest)
    assert latest.name == "step-00000002" and state["stopped_by"] == "done" and state["last_eval"]["step"] == 2
    assert eval_steps(out) == [2]
    assert pretrain.main([*argv, "--resume"]) == 0
    assert eval_steps(out) == [2]  # once

    log = tmp_path / "log.jsonl"  # a checkpoint at step 2 saved before the step-2 evaluation was logged
    log.write_text("".join(json.dumps(e) + "\n" for e in [{"type": "train", "step": 1}, {"type": "eval", "step": 1},
                                                         {"type": "train", "step": 2}, {"type": "eval", "step": 2},
                                                         {"type": "train", "step": 3}]))
    reporting.truncate_log(log, 2, keep_eval_at_step=False)
    assert [(e["type"], e["step"]) for e in reporting.read_log(log)] == [("train", 1), ("eval", 1), ("train", 2)]
    reporting.truncate_log(log, 1)
    assert [(e["type"], e["step"]) for e in reporting.read_log(log)] == [("train", 1), ("eval", 1)]


def test_a_second_ctrl_c_before_the_first_checkpoint_says_there_is_none(train_files, tmp_path, monkeypatch, capsys):
    """Ctrl-C at step 1, then again during the save of its checkpoint (the first): the line said "OUT holds the run's
    last checkpoint" over an empty checkpoints folder, and the same command was told to "continue it". Now both say
    that there is no checkpoint and that --resume starts the run over."""
    out = tmp_path / "run"
    argv = open_ended_argv(train_files, out, "--max-steps", "3")
    real_save = checkpointing.save_file

    def second_ctrl_c(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return real_save(*args, **kwargs)

    with monkeypatch.context() as m:
        interrupt_at(m, 1)
        m.setattr(checkpointing, "save_file", second_ctrl_c)
        assert pretrain.main(argv) == runtime.EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert (out / checkpointing.CHECKPOINTS).is_dir() and checkpointing.Checkpoints(out).latest() is None
    assert err.strip().splitlines()[-1] == ("interrupted: run the same command again with --resume (no checkpoint "
                                            "was written yet: the run starts over)"), err
    assert pretrain.main(argv) == runtime.EXIT_USER_ERROR
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "stopped before its first checkpoint" in last and "--resume to start it again" in last, last
    assert pretrain.main([*argv, "--resume"]) == 0
    assert "no checkpoint" in capsys.readouterr().err and (out / "model.safetensors").is_file()


HOLD_LOCK = """\
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, b"%d\\n" % os.getpid())
print("locked", flush=True)
time.sleep(120)
"""


def test_a_second_process_training_into_the_same_out_is_refused(train_files, interrupted, capsys):
    """While one process trained into OUT (a second terminal, a scheduler's requeue with --resume), another trained
    there too: both exited 0 with every step twice in the log. OUT/.lock is now held (flock) by the process that
    trains there, and another is refused in one line naming it, before it reads any data; the lock goes when the
    script ends, however it ends, and one left by a killed process (kill -9) blocks nothing."""
    _, out = interrupted
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out / runtime.LOCK_NAME)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        before = sorted(p.name for p in out.rglob("*"))
        for extra in (["--resume"], []):
            assert pretrain.main(open_ended_argv(train_files, out, *RESUMED, *extra)) == runtime.EXIT_USER_ERROR
            captured = capsys.readouterr()
            assert captured.err.strip().splitlines()[-1] == (
                f"error: {out} is being trained by process {holder.pid} (it holds {out / runtime.LOCK_NAME}): let "
                "it finish or stop it, or choose another --out"), captured.err
            assert "training rows" not in captured.out
        assert sorted(p.name for p in out.rglob("*")) == before
    finally:
        holder.kill()  # SIGKILL: its lock file stays, unlocked
        holder.wait()
    assert (out / runtime.LOCK_NAME).is_file()
    assert pretrain.main(open_ended_argv(train_files, out, *RESUMED, "--heads", "2", "--resume")) == \
        runtime.EXIT_USER_ERROR  # refused after the lock was taken: it is released all the same
    assert lock_is_free(out)
    assert pretrain.main(open_ended_argv(train_files, out, *RESUMED, "--resume")) == 0
    assert lock_is_free(out) and not (out / runtime.LOCK_NAME).exists()  # a finished folder holds no lock file


def test_a_resume_with_other_training_data_at_the_same_paths_is_warned_about(train_files, interrupted, monkeypatch,
                                                                              capsys):
    """A tokenizer retrained in place (the same vocabulary size) or a corpus edited at its path was resumed without a
    word: the options are compared by value, and the paths had not changed. The trainer state now keeps the training
    data's row count and a digest of its token ids; a resume on other data is warned about and recorded in
    metrics.json's resumed_with, as a changed option is. A checkpoint written before that resumes as before."""
    from train import packing

    _, out = interrupted
    plain = Path(shutil.copytree(out, out.parent / "plain"))
    pack = packing.pack_sequences

    def other_token_ids(documents, tokenizer, *args, **kwargs):  # as another tokenizer of 300 would give them
        rows = pack(documents, tokenizer, *args, **kwargs)
        return torch.where(rows > 4, 5 + (rows - 4) % 295, rows)  # the ids after the special tokens', moved by one

    _, state = checkpointing.Checkpoints.load(checkpointing.Checkpoints(out).latest())
    rows = state["training_data"]["rows"]
    with monkeypatch.context() as m:
        m.setattr(packing, "pack_sequences", other_token_ids)
        assert pretrain.main(open_ended_argv(train_files, out, *RESUMED, "--resume")) == 0
    err = capsys.readouterr().err
    assert (f"warning: the training data differ from the checkpointed run's ({rows:,} rows, other token ids): were "
            "the tokenizer or the corpus changed at the same path?") in err, err
    changed = json.loads((out / "metrics.json").read_text())["resumed_with"][0]["changed"]
    assert list(changed) == ["training_data"] and changed["training_data"][0] == state["training_data"]

    for folder in (plain / checkpointing.CHECKPOINTS).iterdir():  # checkpoints of the code before: no digest
        _, state = checkpointing.Checkpoints.load(folder)
        del state["training_data"]
        torch.save(state, folder / "trainer.pt")
    assert pretrain.main(open_ended_argv(train_files, plain, *RESUMED, "--resume")) == 0
    err = capsys.readouterr().err
    assert "resumed from" in err and "training data" not in err
    assert "resumed_with" not in json.loads((plain / "metrics.json").read_text())


def test_a_resume_with_other_attention_heads_is_refused_as_another_shape_is(train_files, interrupted, capsys):
    """--heads does not show in the weights' shapes: a resume with another --heads was warned about ("heads None ->
    2") and trained on, the same weights computing another function from the resumed step. The trainer state keeps
    the model's attention heads; a resume with others is refused in a line naming the field and the option, also
    from a checkpoint written before that (whose --heads option is compared)."""
    _, out = interrupted  # the tiny preset: 4 heads
    step5 = out / checkpointing.CHECKPOINTS / "step-00000005"
    assert pretrain.main(open_ended_argv(train_files, out, *RESUMED, "--heads", "2", "--resume")) == \
        runtime.EXIT_USER_ERROR
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {step5} does not fit this model: the checkpointed run's has num_attention_heads 4 (this command: 2); "
        "resume with the run's own model options (--heads)")
    for folder in (out / checkpointing.CHECKPOINTS).iterdir():  # checkpoints of the code before: its options
        _, state = checkpointing.Checkpoints.load(folder)
        del state["architecture"]
        torch.save(state, folder / "trainer.pt")
    assert pretrain.main(open_ended_argv(train_files, out, *RESUMED, "--heads", "2", "--resume")) == \
        runtime.EXIT_USER_ERROR
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {step5} does not fit this model: the checkpointed run was started with --heads not given (this "
        "command: 2); resume with the run's own model options (--heads)")
    assert pretrain.main(open_ended_argv(train_files, out, *RESUMED, "--resume")) == 0


class Killed(BaseException):
    """A process killed at this point (kill -9): nothing after it runs, no handler, no cleanup."""


def test_a_second_save_of_a_step_keeps_that_step_at_every_moment(train_files, tmp_path, monkeypatch, capsys):
    """The same step saved twice (in the loop, then after it with the run's end recorded): the old folder was deleted
    before the new one was renamed into place, and a kill between the two lost the step (the next --resume deleted
    the new copy as a leftover and started the run over). Now the old one is set aside, and put back by the next
    resume if the new one did not arrive."""
    out = tmp_path / "run"
    argv = open_ended_argv(train_files, out, "--max-steps", "2", "--save-every", "2")
    root, real_replace, real_rename, real_rmtree = out / checkpointing.CHECKPOINTS, os.replace, os.rename, shutil.rmtree
    killed, saves = [], []

    def replace(src, dst, *args, **kwargs):  # the second save of step 2 is killed as it renames its folder in
        if killed:
            return None
        if Path(src).name.startswith(".tmp-step-00000002") and Path(dst) == root / "step-00000002":
            saves.append(src)
            if len(saves) == 2:
                killed.append(src)
                raise Killed
        return real_replace(src, dst, *args, **kwargs)

    def frozen(real):  # a killed process renames and deletes nothing more
        return lambda *args, **kwargs: None if killed else real(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(checkpointing.os, "replace", replace)
        m.setattr(checkpointing.os, "rename", frozen(real_rename))
        m.setattr(checkpointing.shutil, "rmtree", frozen(real_rmtree))
        with pytest.raises(Killed):
            pretrain.main(argv)
    assert killed and checkpointing.Checkpoints(out).latest() is None  # the moment between the two renames
    assert pretrain.main([*argv, "--resume"]) == 0
    assert f"resumed from {root / 'step-00000002'} (step 2" in capsys.readouterr().err


def test_a_write_probe_of_another_process_is_not_taken_for_a_file_in_a_new_out(tmp_path, monkeypatch):
    """The two-process DDP run failed now and then with "ddp is not empty (tmphg08ajav)": rank 1 probed --out for
    write access (a folder made and removed) while rank 0 checked that --out was empty. The probe has a name of its
    own, which the emptiness check passes over; anything else is still refused."""
    import tempfile

    out = tmp_path / "out"
    out.mkdir()
    made = []
    real = tempfile.TemporaryDirectory

    class Caught(real):  # the probe caught while it exists: the other process's view of --out
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(Path(self.name).name)
            out_folder.check_fresh_out(out)  # rank 0's check, while rank 1's probe is there

    monkeypatch.setattr(tempfile, "TemporaryDirectory", Caught)
    runtime.check_writable_folder(out)
    assert made and made[0].startswith(runtime.WRITE_PROBE_PREFIX) and list(out.iterdir()) == []
    (out / "tmp-of-someone").mkdir()
    with pytest.raises(runtime.UserError, match=r"is not empty \(tmp-of-someone\)"):
        out_folder.check_fresh_out(out)


def test_a_run_resumed_from_before_head_seed_records_its_head_seed_as_unknown(train_files, tmp_path, tiny_mlm_dir,
                                                                              monkeypatch):
    """Its head was drawn from --seed, not --head-seed: resumed with today's code, it recorded head_seed 0, and
    train.average took it as matching members that did start from head seed 0."""
    argv = lambda out, *extra: finetune_argv(train_files, out, "--init", str(tiny_mlm_dir), "--imdb", "", "--checks",
                                             "", "--max-steps", "4", "--eval-every", "0", *extra)
    new, old = tmp_path / "new", tmp_path / "old"
    for out in (new, old):
        with monkeypatch.context() as m:
            interrupt_at(m, 2)
            assert finetune.main(argv(out)) == runtime.EXIT_INTERRUPTED
    checkpoint = next((old / checkpointing.CHECKPOINTS).iterdir()) / "trainer.pt"
    state = torch.load(checkpoint, weights_only=True)
    del state["args"]["head_seed"]  # as a checkpoint written before the option existed
    torch.save(state, checkpoint)
    for out in (new, old):
        assert finetune.main(argv(out, "--resume")) == 0
    assert json.loads((new / "metrics.json").read_text())["head_seed"] == 0
    assert "head_seed" not in json.loads((old / "metrics.json").read_text())


def test_a_fine_tuning_resumed_with_other_held_out_rows_is_refused(train_files, tmp_path, tiny_mlm_dir, monkeypatch,
                                                                  capsys):
    """A fine-tuning resumed with another --dev-seed was only warned about ("options differ: dev_seed 0 -> 1"): its
    first steps had trained on rows of the new dev slice, and the card called that slice never trained on. A resume
    that changes which rows of --train are held out (--dev-fraction, --dev-seed, --calibration-n/-seed/-split,
    --train's rows) is refused in one line naming the options, as another model shape is; so is --dev-fraction beside
    a checkpoint from before the option (which held no dev slice out). An option that draws no slice (--dev-seed
    without --dev-fraction) is not compared; --train is compared by its path in a checkpoint from before its rows'
    digest was kept."""
    from train.resume_checks import held_out_rows_differ

    argv = lambda *extra: finetune_argv(train_files, tmp_path / "run", "--init", str(tiny_mlm_dir), "--imdb", "",
                                        "--checks", "", "--max-steps", "4", "--eval-every", "0", "--dev", "",
                                        "--dev-fraction", "0.2", "--calibration-split", "random", *extra)
    with monkeypatch.context() as m:
        interrupt_at(m, 2)
        assert finetune.main(argv()) == runtime.EXIT_INTERRUPTED
    step2 = tmp_path / "run" / checkpointing.CHECKPOINTS / "step-00000002"
    how = ("resumed with this command's values, the run could train on rows it scores as held out: resume with the "
           "run's own options ({}), or choose another --out for a new run")

    def refused(*extra):
        assert finetune.main(argv(*extra, "--resume")) == runtime.EXIT_USER_ERROR
        return capsys.readouterr().err.strip().splitlines()[-1]

    assert refused("--dev-seed", "1") == (
        f"error: {step2} was trained with other rows of its training file held out: the checkpointed run's "
        f"--dev-seed 0 (this command: 1); {how.format('--dev-seed')}")
    assert refused("--dev-fraction", "0.1", "--calibration-seed", "3") == (
        f"error: {step2} was trained with other rows of its training file held out: the checkpointed run's "
        f"--calibration-seed 0 (this command: 3), --dev-fraction 0.2 (this command: 0.1); "
        f"{how.format('--calibration-seed, --dev-fraction')}")
    other = tmp_path / "other.tsv"  # other rows: one label changed
    rows = (train_files / "train.tsv").read_text().splitlines(keepends=True)
    text, label = rows[1].rstrip("\n").split("\t")
    other.write_text("".join([rows[0], f"{text}\t{1 - int(label)}\n", *rows[2:]]))
    assert refused("--train", str(other)) == (
        f"error: {step2} was trained with other rows of its training file held out: the checkpointed run's --train "
        f"{str(train_files / 'train.tsv')!r} (this command: {str(other)!r}, other rows); {how.format('--train')}")
    state_file = step2 / "trainer.pt"
    saved = state_file.read_bytes()
    state = torch.load(state_file, weights_only=True)
    del state["args"]["dev_fraction"], state["args"]["dev_seed"]  # as a checkpoint written before the options
    torch.save(state, state_file)
    assert refused() == (f"error: {step2} was trained with other rows of its training file held out: the "
                         f"checkpointed run's --dev-fraction 0.0 (this command: 0.2); {how.format('--dev-fraction')}")
    assert held_out_rows_differ(step2, state, {"dev_fraction": 0.0, "dev_seed": 1}) is None  # no dev slice drawn
    digest = state["args"].pop("train_sha256")  # as a checkpoint written before it was kept
    assert f"the checkpointed run's --train {str(train_files / 'train.tsv')!r} (this command: 'copy.tsv');" in \
        held_out_rows_differ(step2, state, {**state["args"], "train": "copy.tsv", "train_sha256": digest})
    state_file.write_bytes(saved)
    assert finetune.main(argv("--resume")) == 0  # the run's own options
    assert "resumed_with" not in json.loads((tmp_path / "run" / "metrics.json").read_text())


def test_a_fine_tuning_resumed_with_its_training_file_at_another_path_is_not_refused(train_files, tmp_path,
                                                                                    tiny_mlm_dir, monkeypatch):
    """`--train data/mine.csv` resumed as `--train /home/me/data/mine.csv`, or from a copy of the file, was refused as
    "other rows of its training file held out": --train was compared as spelled. Its rows are compared (their digest,
    as the dev slice records it): the same rows are resumed (said as a changed option), other rows are refused."""
    argv = lambda train, *extra: finetune_argv(train_files, tmp_path / "run", "--init", str(tiny_mlm_dir), "--imdb",
                                               "", "--checks", "", "--max-steps", "4", "--eval-every", "0", "--dev",
                                               "", "--dev-fraction", "0.2", "--calibration-split", "random",
                                               "--train", str(train), *extra)
    with monkeypatch.context() as m:
        interrupt_at(m, 2)
        assert finetune.main(argv(train_files / "train.tsv")) == runtime.EXIT_INTERRUPTED
    copy = tmp_path / "copy" / "train.tsv"
    copy.parent.mkdir()
    shutil.copy(train_files / "train.tsv", copy)
    monkeypatch.chdir(tmp_path)
    assert finetune.main(argv(Path("copy/train.tsv"), "--resume")) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["resumed_with"] == [{"step": 2, "changed": {"train": [str(train_files / "train.tsv"),
                                                                          "copy/train.tsv"]}}]
    assert metrics["dev_slice"]["data"] == "copy/train.tsv" and metrics["train_steps"] == 4


def test_a_fine_tuning_resumed_with_another_imdb_file_is_refused(train_files, tmp_path, tiny_mlm_dir, monkeypatch,
                                                                 capsys):
    """--imdb was not compared on --resume: resumed with another reviews file, the run's first steps had trained
    without the first file's sample and its last ones without the second's, and its IMDB figure scored the second's
    as never trained on. Its rows are compared as --train's are (their digest, `resume_checks.ROWS_RECORDED`): other
    rows are refused in one line naming both files, the same rows by another path are resumed (said as a changed
    option). A checkpoint from before the digest was kept compares --imdb as spelled: its own --imdb resumes it."""
    from train.resume_checks import held_out_rows_differ

    argv = lambda imdb, *extra: finetune_argv(train_files, tmp_path / "run", "--init", str(tiny_mlm_dir), "--checks",
                                              "", "--max-steps", "4", "--eval-every", "0", "--imdb", str(imdb), *extra)
    imdb = train_files / "imdb.tsv"
    with monkeypatch.context() as m:
        interrupt_at(m, 2)
        assert finetune.main(argv(imdb)) == runtime.EXIT_INTERRUPTED
    step2 = tmp_path / "run" / checkpointing.CHECKPOINTS / "step-00000002"
    other = tmp_path / "other.tsv"  # other rows: one review's label changed
    rows = imdb.read_text().splitlines(keepends=True)
    text, label = rows[1].rstrip("\n").split("\t")
    other.write_text("".join([rows[0], f"{text}\t{1 - int(label)}\n", *rows[2:]]))
    assert finetune.main(argv(other, "--resume")) == runtime.EXIT_USER_ERROR
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {step2} was trained with other rows of its training file held out: the checkpointed run's --imdb "
        f"{str(imdb)!r} (this command: {str(other)!r}, other rows); resumed with this command's values, the run could "
        "train on rows it scores as held out: resume with the run's own options (--imdb), or choose another --out for "
        "a new run")
    state = torch.load(step2 / "trainer.pt", weights_only=True)
    digest = state["args"].pop("imdb_sha256")  # as a checkpoint written before it was kept
    assert digest and f"the checkpointed run's --imdb {str(imdb)!r} (this command: 'copy.tsv');" in \
        held_out_rows_differ(step2, state, {**state["args"], "imdb": "copy.tsv", "imdb_sha256": digest})
    assert held_out_rows_differ(step2, state, {**state["args"], "imdb_sha256": digest}) is None
    copy = tmp_path / "copy" / "imdb.tsv"
    copy.parent.mkdir()
    shutil.copy(imdb, copy)
    assert finetune.main(argv(copy, "--resume")) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["resumed_with"] == [{"step": 2, "changed": {"imdb": [str(imdb), str(copy)]}}]
    assert metrics["imdb_data"] == str(copy) and metrics["train_steps"] == 4


def test_a_fine_tuning_resumed_with_another_imdb_sample_is_refused(train_files, tmp_path, tiny_mlm_dir, monkeypatch,
                                                                   capsys):
    """--imdb-n, --imdb-seed and --keep-imdb-sample choose the IMDB reviews held out of --train: a resume that changed
    one was only warned about ("options differ"), and its steps trained on reviews the IMDB figure then scored as
    never trained on (or held out reviews the run trained on). It is refused as another held-out slice is, in one
    line naming the option, its recorded and its given value; without --imdb in either run they are not compared."""
    argv = lambda *extra: finetune_argv(train_files, tmp_path / "run", "--init", str(tiny_mlm_dir), "--checks", "",
                                        "--max-steps", "4", "--eval-every", "0", *extra)
    with monkeypatch.context() as m:
        interrupt_at(m, 2)
        assert finetune.main(argv()) == runtime.EXIT_INTERRUPTED
    step2 = tmp_path / "run" / checkpointing.CHECKPOINTS / "step-00000002"

    def refused(*extra):
        assert finetune.main(argv(*extra, "--resume")) == runtime.EXIT_USER_ERROR
        return capsys.readouterr().err.strip().splitlines()[-1]

    for extra, said, named in ((("--imdb-n", "10"), "--imdb-n 20 (this command: 10)", "--imdb-n"),
                               (("--imdb-seed", "1"), "--imdb-seed 0 (this command: 1)", "--imdb-seed"),
                               (("--keep-imdb-sample",), "--keep-imdb-sample not given (this command: given)",
                                "--keep-imdb-sample")):
        line = refused(*extra)
        assert line.startswith(f"error: {step2} was trained with other rows of its training file held out: the "
                               f"checkpointed run's {said}; ") and f"own options ({named}), or choose another --out" \
            in line, line
    from train.resume_checks import held_out_rows_differ

    state = torch.load(step2 / "trainer.pt", weights_only=True)
    state["args"]["imdb"] = ""
    assert held_out_rows_differ(step2, state, {**state["args"], "imdb_seed": 1}) is None  # no IMDB sample drawn
    assert finetune.main(argv("--resume")) == 0


def test_the_averaged_runs_curves_name_members_of_the_same_name_apart():
    """The average of phases 26 and 27 (`train.average assets/mini-roberta-mlm runs/gpu-4/mini-roberta-mlm`) drew
    two lines both labelled "mini-roberta-mlm": a label takes as many parent folders as it needs to differ."""
    from pathlib import Path

    assert reporting.distinct_labels([Path("assets/mini-roberta-mlm"), Path("runs/gpu-4/mini-roberta-mlm")]) == [
        "assets/mini-roberta-mlm", "gpu-4/mini-roberta-mlm"]
    assert reporting.distinct_labels([Path("runs/sentiment/s0"), Path("runs/sentiment/s1")]) == ["s0", "s1"]
    assert reporting.distinct_labels([Path("a/x/run"), Path("b/x/run")]) == ["a/x/run", "b/x/run"]


def test_the_averaged_runs_curves_say_each_members_tokens_and_machine():
    """A folder name alone ("assets/mini-roberta-mlm", "gpu-4/mini-roberta-mlm") says nothing to a reader of the
    card about which run was which: each line's label adds, under its folder, the tokens that member trained on
    and its machine, as far as its metrics.json says; a member that is itself an average names its members'
    machines."""
    from train.average import member_label

    h100 = {"device": "cuda:0", "gpu": "NVIDIA H100 80GB HBM3"}
    epyc = {"device": "cpu", "cpu": "AMD EPYC", "cpu_count": 2}
    assert member_label("assets/mini-roberta-mlm", {"train_tokens": 627_375_832, "hardware": h100}) == (
        "assets/mini-roberta-mlm\n627.4M tokens on NVIDIA H100 80GB HBM3")
    average = {"averaged": 2, "hardware": epyc, "member_hardware": [h100, {"gpu": "NVIDIA H200"}]}
    assert member_label("x", average) == "x\nNVIDIA H100 80GB HBM3 and NVIDIA H200"
    assert member_label("s0", {"train_tokens": 1_532_000, "hardware": epyc}) == "s0\n1.5M tokens on AMD EPYC (2 cores)"
    assert member_label("run", {}) == "run"
