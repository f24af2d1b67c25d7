"""Test-point data computed once (judger.testdata, issue 14): bit-identical to drawing it afresh, the
RNG left exactly as drawing leaves it, fresh copies for every launch, a bounded memory cache and a disk
cache that survives a new process and never trusts a bad file."""
import dataclasses
import os
import random
import subprocess
import sys

import numpy
import pytest
import torch

from judger import testdata
from judger.grading import compile_point, judge_compiled, point_trials, seed_rngs, trial_inputs
from judger.tasks import TASKS, TRIALS, all_points, get_point, get_task
from judger.verdicts import Verdict

from judger_testlib import ROOT, kernel

T1 = get_task(1)
SMALL, BIG = get_point(1, 0), get_point(1, 1)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty disk cache in tmp_path and an empty memory cache."""
    monkeypatch.setenv(testdata.DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(testdata.MEMORY_ENV, raising=False)
    testdata.clear_memory()
    yield tmp_path / "cache"
    testdata.clear_memory()


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's raw bits (NaN payloads included), for bit-for-bit equality."""
    return t.contiguous().view(torch.int32) if t.dtype == torch.float32 else t


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride() and torch.equal(bits(a), bits(b))


def fresh(task, point):
    """The data as today's loop computed it: seed, then per trial draw, note the RNG state, reference."""
    torch.set_num_threads(1)
    out = []
    for io in trial_inputs(task, point):
        out.append((io, torch.get_rng_state(), task.expected(io)))
    return out


def assert_same_as_fresh(data, task, point):
    want = fresh(task, point)
    assert len(data.trials) == TRIALS == len(want)
    for trial, (io, state, ref) in zip(data.trials, want):
        assert list(trial.io) == list(io) == list(task.inputs)
        for name in io:
            assert same_bits(trial.io[name], io[name]), (task.id, point.index, name)
        assert same_bits(trial.reference, ref)
        assert torch.equal(trial.rng_state, state)


@pytest.mark.slow
@pytest.mark.parametrize("task_id, index", [(t.id, p.index) for t, p in all_points()])
def test_every_points_cached_data_equals_fresh_data_bit_for_bit_from_memory_and_from_disk(cache, task_id, index):
    task, point = get_task(task_id), get_point(task_id, index)
    made = testdata.point_data(task, point)
    assert_same_as_fresh(made, task, point)
    assert testdata.point_data(task, point) is made  # memory
    testdata.clear_memory()
    loaded = testdata.point_data(task, point)  # disk
    assert loaded is not made
    assert_same_as_fresh(loaded, task, point)


def test_small_points_cached_data_equals_fresh_data(cache):
    for task in TASKS.values():
        point = min(task.points, key=lambda p: sum(p.task_args.values()))
        assert_same_as_fresh(testdata.point_data(task, point), task, point)
        testdata.clear_memory()
        assert_same_as_fresh(testdata.point_data(task, point), task, point)
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        testdata.cache_file(cache, t, min(t.points, key=lambda p: sum(p.task_args.values())),
                            testdata.data_key(t, min(t.points, key=lambda p: sum(p.task_args.values())))).name
        for t in TASKS.values())


def test_task_four_output_starts_nan_in_every_copy(cache):
    task = get_task(4)
    for io, ref in point_trials(task, task.points[0]):
        assert bool(torch.isnan(io["O"]).all()) and not bool(torch.isnan(ref).any())


# ---- the RNGs ---------------------------------------------------------------------------------------

def rng_states():
    return torch.get_rng_state(), random.getstate(), numpy.random.get_state()[1].copy()


def assert_rng_states_equal(a, b):
    assert torch.equal(a[0], b[0]) and a[1] == b[1] and numpy.array_equal(a[2], b[2])


def drawn_states(task, point, trials):
    """The RNG states after drawing ``trials`` trials the old way."""
    states = []
    for _ in trial_inputs(task, point, trials):
        states.append(rng_states())
    return states


def test_point_trials_leave_the_rngs_as_drawing_does_at_every_trial(cache):
    task, point = get_task(3), get_point(3, 0)
    want = drawn_states(task, point, TRIALS)
    for source in ("generated", "memory", "disk"):
        if source == "disk":
            testdata.clear_memory()
        torch.manual_seed(999)
        random.seed(5)
        for k, _ in enumerate(point_trials(task, point)):
            assert_rng_states_equal(rng_states(), want[k])
        assert k == TRIALS - 1
        assert testdata.memory_stats()["points"] == 1


def test_judge_leaves_the_rngs_as_the_contests_loop_does(cache):
    compiled = compile_point(kernel("vadd_only", 1), T1, SMALL)
    three = drawn_states(T1, SMALL, 3)[-1]
    torch.manual_seed(1)
    assert judge_compiled(compiled, T1, SMALL).verdict is Verdict.AC
    assert_rng_states_equal(rng_states(), three)
    # a wrong answer ends the point at trial 1: the RNGs are as after drawing trial 1 only
    wrong = compile_point(kernel("wrong_result", 1), T1, SMALL)
    one = drawn_states(T1, SMALL, 1)[-1]
    assert judge_compiled(wrong, T1, SMALL).verdict is Verdict.WA
    assert_rng_states_equal(rng_states(), one)


def test_compile_sees_trial_one_and_leaves_its_rng_state_cached_or_not(cache, baseline_module):
    task, point = get_task(2), get_point(2, 0)
    want_state = drawn_states(task, point, 1)[-1]
    want_io = next(trial_inputs(task, point))
    for cached in (False, True):
        if cached:
            testdata.point_data(task, point)
        seen = {}

        class Spy:
            def compile(self, task_args, io_tensors):
                seen.update(io_tensors)
                seen["state"] = rng_states()
                return baseline_module.get_kernel(2).compile(task_args, io_tensors)

        compile_point(Spy(), task, point)
        assert_rng_states_equal(seen.pop("state"), want_state)
        assert all(same_bits(seen[k], want_io[k]) for k in want_io)
        assert testdata.memory_stats()["points"] == int(cached)


# ---- fresh copies -------------------------------------------------------------------------------------

def test_every_launch_gets_fresh_copies_and_the_masters_never_change(cache):
    data = testdata.point_data(T1, SMALL)
    masters = {k: v.clone() for k, v in data.trials[0].io.items()}
    first = [io for io, _ in point_trials(T1, SMALL)]
    for io in first:
        for name, t in io.items():
            assert all(t.data_ptr() != tr.io[name].data_ptr() for tr in data.trials)
            t.fill_(123.0)  # what a kernel writing its inputs and outputs in place does
    again = next(point_trials(T1, SMALL))[0]
    assert all(same_bits(again[k], masters[k]) for k in masters)
    assert all(same_bits(data.trials[0].io[k], masters[k]) for k in masters)


def test_a_kernel_that_writes_its_inputs_does_not_poison_the_next_submission(cache):
    vandal = compile_point(kernel("writes_inputs", 1), T1, SMALL)
    judge_compiled(vandal, T1, SMALL)
    good = judge_compiled(compile_point(kernel("vadd_only", 1), T1, SMALL), T1, SMALL)
    assert (good.verdict, good.cycles) == (Verdict.AC, 4 * 134)
    assert_same_as_fresh(testdata.point_data(T1, SMALL), T1, SMALL)


# ---- which tasks are cached -----------------------------------------------------------------------------

def test_a_modified_task_is_never_served_the_contests_data(cache):
    testdata.point_data(T1, SMALL)
    doubled = dataclasses.replace(T1, reference=lambda io: 2 * (io["a"] + io["b"]))
    assert doubled == T1  # dataclass equality ignores the functions: identity decides
    assert not testdata.cacheable(doubled, SMALL) and testdata.cacheable(T1, SMALL)
    data = testdata.point_data(doubled, SMALL)
    assert torch.equal(data.trials[0].reference, 2 * (data.trials[0].io["a"] + data.trials[0].io["b"]))
    other = dataclasses.replace(SMALL, task_args={"N": 128})
    assert not testdata.cacheable(T1, other)
    assert testdata.point_data(T1, other).trials[0].io["a"].shape == (128,)


def test_keys_differ_per_point_and_follow_torch_and_the_format(monkeypatch):
    keys = {testdata.data_key(t, p) for t, p in all_points()}
    assert len(keys) == 10 and all(len(k) == 64 for k in keys)
    before = testdata.data_key(T1, SMALL)
    monkeypatch.setattr(torch, "__version__", "0.0.0-other")
    assert testdata.data_key(T1, SMALL) != before
    monkeypatch.undo()
    monkeypatch.setattr(testdata, "FORMAT", testdata.FORMAT + 1)
    assert testdata.data_key(T1, SMALL) != before


# ---- memory bound ---------------------------------------------------------------------------------------

def test_memory_cache_holds_what_fits_and_nothing_larger_than_its_bound(cache, monkeypatch):
    small = testdata.point_data(T1, SMALL).nbytes  # 3 trials x (3 io tensors + reference) x 16384 x 4 + RNG states
    assert small == 3 * (4 * 16384 * 4 + torch.get_rng_state().numel())
    t4 = get_task(4)
    other = testdata.point_data(t4, t4.points[0]).nbytes
    monkeypatch.setenv(testdata.MEMORY_ENV, str((small + other) / 2**20))
    testdata.clear_memory()
    testdata.point_data(T1, SMALL)
    testdata.point_data(t4, t4.points[0])
    assert testdata.memory_stats() == {"points": 2, "bytes": small + other, "limit": small + other}
    t3 = get_task(3)
    big = testdata.point_data(t3, t3.points[0])  # larger than the bound: served, not kept, nothing evicted
    assert big.nbytes > small + other
    assert testdata.memory_stats() == {"points": 2, "bytes": small + other, "limit": small + other}
    testdata.clear_memory()
    monkeypatch.setenv(testdata.MEMORY_ENV, "0")
    testdata.point_data(T1, SMALL)
    assert testdata.memory_stats() == {"points": 0, "bytes": 0, "limit": 0}


def test_eviction_drops_the_least_recently_used_point_first(cache, monkeypatch):
    t4 = get_task(4)
    a = testdata.point_data(T1, SMALL)
    b = testdata.point_data(t4, t4.points[1])
    c = testdata.point_data(t4, t4.points[0])
    assert a.nbytes < c.nbytes < b.nbytes
    monkeypatch.setenv(testdata.MEMORY_ENV, str((a.nbytes + b.nbytes) / 2**20))
    testdata.clear_memory()
    a = testdata.point_data(T1, SMALL)
    b = testdata.point_data(t4, t4.points[1])
    assert testdata.point_data(T1, SMALL) is a  # a is now the most recently used
    c = testdata.point_data(t4, t4.points[0])  # b goes (least recent); a + c fit
    assert testdata.memory_stats()["bytes"] == a.nbytes + c.nbytes
    assert testdata.point_data(T1, SMALL) is a and testdata.point_data(t4, t4.points[0]) is c
    again = testdata.point_data(t4, t4.points[1])  # from the disk, evicting the others
    assert again is not b
    assert_same_as_fresh(again, t4, t4.points[1])


def test_a_bad_memory_setting_falls_back_to_the_default(cache, monkeypatch):
    monkeypatch.setenv(testdata.MEMORY_ENV, "lots")
    assert testdata.memory_stats()["limit"] == testdata.DEFAULT_MEMORY_MB * 2**20


# ---- disk ------------------------------------------------------------------------------------------------

def test_a_fresh_process_starts_warm_from_the_disk(cache):
    testdata.point_data(T1, BIG)
    path = testdata.cache_file(cache, T1, BIG, testdata.data_key(T1, BIG))
    assert path.is_dir() and (path.parent.stat().st_mode & 0o777) == (path.stat().st_mode & 0o777) == 0o700
    code = ("import sys; from judger import testdata; from judger.tasks import get_point, get_task;"
            "testdata.generate = None;"  # generating would fail: the data must come from the file
            "d = testdata.point_data(get_task(1), get_point(1, 1));"
            "sys.stdout.write(str(float(d.trials[2].reference.double().sum())))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, testdata.DIR_ENV: str(cache)})
    want = fresh(T1, BIG)[2][2]
    assert out.stdout == str(float(want.double().sum()))


@pytest.mark.parametrize("damage", ["truncate", "garbage", "wrong_key", "wrong_dtype", "missing_array",
                                    "not_a_directory", "same_size", "no_checksums"])
def test_a_damaged_cache_entry_is_recomputed_and_rewritten(cache, damage, caplog):
    testdata.point_data(T1, SMALL)
    testdata.clear_memory()
    path = testdata.cache_file(cache, T1, SMALL, testdata.data_key(T1, SMALL))
    ref = path / "t1_ref.npy"
    if damage == "truncate":
        ref.write_bytes(ref.read_bytes()[: ref.stat().st_size // 2])
    elif damage == "garbage":
        ref.write_bytes(b"not an npy file at all")
    elif damage == "wrong_key":
        numpy.save(path / "key.npy", numpy.array("0" * 64))
    elif damage == "wrong_dtype":
        numpy.save(path / "t1_io_a.npy", numpy.load(path / "t1_io_a.npy").astype(numpy.float64))
    elif damage == "missing_array":
        (path / "t2_ref.npy").unlink()
    elif damage == "same_size":  # bytes changed in place, the header and the size intact: only the checksum tells
        data = bytearray(ref.read_bytes())
        data[-4093] ^= 0x40
        ref.write_bytes(bytes(data))
    elif damage == "no_checksums":
        (path / testdata.CHECKSUMS).unlink()
    else:  # a plain file where the entry's directory belongs
        for f in path.iterdir():
            f.unlink()
        path.rmdir()
        path.write_bytes(b"junk")
    with caplog.at_level("WARNING", logger="judger.testdata"):
        data = testdata.point_data(T1, SMALL)
    assert "unreadable" in caplog.text and "recomputing" in caplog.text
    assert_same_as_fresh(data, T1, SMALL)
    testdata.clear_memory()
    caplog.clear()
    with caplog.at_level("WARNING", logger="judger.testdata"):
        assert_same_as_fresh(testdata.point_data(T1, SMALL), T1, SMALL)  # rewritten: loads cleanly now
    assert caplog.text == ""


def test_disk_cache_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(testdata.DIR_ENV, "off")
    testdata.clear_memory()
    assert testdata.cache_dir() is None
    assert_same_as_fresh(testdata.point_data(T1, SMALL), T1, SMALL)
    testdata.clear_memory()


def test_an_unwritable_cache_directory_only_costs_time(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the directory should be")
    monkeypatch.setenv(testdata.DIR_ENV, str(blocker / "cache"))
    testdata.clear_memory()
    with caplog.at_level("WARNING", logger="judger.testdata"):
        data = testdata.point_data(T1, SMALL)
    assert "cannot write the test point data cache" in caplog.text
    assert_same_as_fresh(data, T1, SMALL)
    testdata.clear_memory()
    assert not list(tmp_path.glob("**/*.tmp"))


def test_seed_rngs_is_the_contests_seeding():
    torch.randn(3, dtype=torch.float64)  # leaves a cached normal sample, which seeding must drop as well
    seed_rngs()
    seeded = torch.get_rng_state()
    torch.randn(3, dtype=torch.float64)
    torch.manual_seed(0)
    assert torch.equal(seeded, torch.get_rng_state())
    seed_rngs()
    a = (torch.rand(3), random.random(), numpy.random.rand())
    torch.manual_seed(0)
    random.seed(0)
    numpy.random.seed(0)
    assert torch.equal(a[0], torch.rand(3)) and a[1] == random.random() and a[2] == numpy.random.rand()


def test_a_loaded_point_is_mapped_from_its_entry_and_a_write_stays_in_the_process(cache):
    """The disk entry is mapped, not read: the master tensors' memory lies in a mapping of the entry's
    files (/proc/self/maps), and writing a master changes neither the file nor a new load."""
    testdata.point_data(T1, BIG)
    testdata.clear_memory()
    loaded = testdata.point_data(T1, BIG)
    path = testdata.cache_file(cache, T1, BIG, testdata.data_key(T1, BIG))
    master = loaded.trials[1].io["a"]
    address = master.data_ptr()
    mapped = []
    for line in open("/proc/self/maps"):
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if len(fields) >= 6 and start <= address < end:
            mapped.append(fields[5])
    assert mapped == [str(path / "t1_io_a.npy")]
    want = master.clone()
    master.fill_(7.0)
    on_disk = numpy.load(path / "t1_io_a.npy")
    assert numpy.array_equal(on_disk, want.numpy())
    testdata.clear_memory()
    assert same_bits(testdata.point_data(T1, BIG).trials[1].io["a"], want)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a child as another user (CI runs as root)")
def test_a_cache_directory_the_judge_cannot_enter_only_costs_time(tmp_path):
    """A cache directory below one the judge's user cannot enter (a misconfiguration): the data is
    computed, a warning says why, nothing is raised (once this was an IE on every point)."""
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    os.chmod(tmp_path, 0o755)
    code = ("import logging, os, sys; logging.basicConfig(level=logging.WARNING, stream=sys.stderr);"
            "from judger import testdata; from judger.tasks import get_point, get_task;"
            "os.seteuid(65534);"  # imports done (this interpreter lies below /root), then the judge's user
            "d = testdata.point_data(get_task(1), get_point(1, 0));"
            "sys.stdout.write(str(float(d.trials[2].reference.double().sum())))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, testdata.DIR_ENV: str(locked / "inner")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == str(float(fresh(T1, SMALL)[2][2].double().sum()))
    assert "Permission denied" in proc.stderr and "recomputing" in proc.stderr


def test_writing_an_entry_removes_the_points_entries_of_other_versions(cache, monkeypatch):
    """One version per point on disk: an entry made under another key (here another format) and a
    format-1 .npz of the point go when the current entry is written; other points' entries and a
    concurrent writer's temporary directory stay."""
    testdata.point_data(T1, SMALL)
    testdata.point_data(T1, BIG)
    old_small = testdata.cache_file(cache, T1, SMALL, testdata.data_key(T1, SMALL))
    big = testdata.cache_file(cache, T1, BIG, testdata.data_key(T1, BIG))
    npz = cache / f"task1_point0_{'0' * 32}.npz"
    npz.write_bytes(b"format 1")
    in_flight = cache / f"{old_small.name}.abc123.tmp"
    in_flight.mkdir()
    monkeypatch.setattr(testdata, "FORMAT", testdata.FORMAT + 1)
    testdata.clear_memory()
    testdata.point_data(T1, SMALL)
    new_small = testdata.cache_file(cache, T1, SMALL, testdata.data_key(T1, SMALL))
    assert new_small != old_small and new_small.is_dir()
    assert not old_small.exists() and not npz.exists()
    assert big.is_dir() and in_flight.is_dir()


def test_a_writer_that_loses_the_race_leaves_no_directory_behind(cache, monkeypatch):
    """Replacing a damaged entry moves it aside, then renames the new one in; when another process renames
    its own entry in between (simulated at that one step: a real race is not reproducible), the loser's
    temporary and moved-aside directories are both removed and the winner's entry stays."""
    testdata.point_data(T1, SMALL)
    testdata.clear_memory()
    path = testdata.cache_file(cache, T1, SMALL, testdata.data_key(T1, SMALL))
    (path / "t0_ref.npy").write_bytes(b"damaged")
    real_rename = os.rename

    def rename(src, dst):
        real_rename(src, dst)
        if str(dst).endswith("/entry"):  # the damaged entry was just moved aside: the other writer wins now
            testdata._store(cache, T1, SMALL, testdata.generate(T1, SMALL))
    monkeypatch.setattr(testdata.os, "rename", rename)
    testdata.point_data(T1, SMALL)
    monkeypatch.undo()
    assert sorted(p.name for p in cache.iterdir()) == [path.name]
    testdata.clear_memory()
    assert_same_as_fresh(testdata.point_data(T1, SMALL), T1, SMALL)
