"""Grading one test point: every verdict from a real failing kernel file, the compile/judge split and
its RNG equivalence, and the dispatcher style of get_kernel."""
import dataclasses
import io as iolib

import pytest
import torch

import kdt
from judger.grading import (CompileFailed, compile_failed_result, compile_point, grade_point, judge_compiled,
                            kernel_for_task, load_submission, seed_rngs, trial_inputs)
from judger.scoring import point_score
from judger.tasks import TASKS, get_point, get_task
from judger.verdicts import PointResult, Verdict

from judger_testlib import BASELINE, fixture_path, kernel

T1 = get_task(1)
SMALL, BIG = get_point(1, 0), get_point(1, 1)


def grade(fixture, task_id=1, index=0, **kw):
    path = fixture_path(fixture)
    return grade_point(kernel(fixture, task_id), get_task(task_id), get_point(task_id, index), source_path=path,
                       **kw)


def round_trip(result: PointResult) -> PointResult:
    assert PointResult.from_dict(result.to_dict()) == result
    return result


# ---- AC ---------------------------------------------------------------------------------------------

def test_accepted_point_is_scored_from_the_last_trials_cycles():
    r = round_trip(grade("vadd_only", 1, 1))
    assert (r.verdict, r.message, r.utilisation) == (Verdict.AC, "", None)
    # 256 jobs of 4096 elements on 1 SM: load a [1, 51], load b [2, 52], add [52, 84], store [84, 134]
    assert r.cycles == 256 * 134 == 34304
    assert r.score == point_score(34304, 11000) == 10 + 90 * (11000 / 34304) ** 4
    t = r.timings
    assert t["total_s"] >= t["compile_s"] + t["simulate_s"] - 1e-9 and t["simulate_s"] > 0 and t["compile_s"] > 0


# ---- CE ---------------------------------------------------------------------------------------------

def test_compile_error_names_the_line_and_quotes_it():
    r = round_trip(grade("compile_error"))
    assert r.verdict is Verdict.CE and r.score == 0.0 and r.cycles is None
    first, quoted, caret = r.message.splitlines()
    assert first == ("UnsupportedFeatureError: Line 10, Col 5, a while loop is not supported in a kernel: use a for i in "
                     "range(n) loop")
    assert quoted.strip() == "10 |     while i < 3:"
    assert caret.endswith("|     ^")


def test_get_kernel_returning_none_is_a_plain_compile_error():
    for task_id in (2, 3, 4):
        r = grade("vadd_only", task_id)
        assert r.verdict is Verdict.CE
        assert r.message == f"this file does not solve task {task_id} (get_kernel returned None)"


def test_undefined_name_in_a_kernel():
    r = grade("mixed_failures", 3)
    assert r.verdict is Verdict.CE
    assert r.message.startswith("SymbolError: Line 26, Col 15, name 'c_tile' is not defined")
    assert "kdt.store(c_tile" in r.message


def test_get_kernel_raising_is_a_compile_error_with_the_files_line():
    module = load_submission(fixture_path("mixed_failures"))
    with pytest.raises(CompileFailed) as info:
        kernel_for_task(module, 2)
    assert info.value.verdict is Verdict.CE
    assert info.value.message.startswith("get_kernel(2) raised KeyError: 2 (line 19 of mixed_failures.py)")
    assert "return table[task_id]" in info.value.message
    r = compile_failed_result(info.value, get_task(2), get_point(2, 1))
    assert (r.task, r.point, r.verdict, r.score, r.cycles) == (2, 1, Verdict.CE, 0.0, None)


def test_python_syntax_error_in_the_file():
    with pytest.raises(CompileFailed) as info:
        load_submission(fixture_path("python_syntax_error"))
    msg = info.value.message
    assert msg.startswith("importing the submission failed: SyntaxError: expected ':'")
    assert "line 4" in msg and "def get_kernel(task_id)" in msg


def test_unreadable_file_and_missing_get_kernel(tmp_path):
    with pytest.raises(CompileFailed, match="cannot read the submission"):
        load_submission(tmp_path / "missing.py")
    empty = tmp_path / "empty.py"
    empty.write_text("import kdt\n")
    with pytest.raises(CompileFailed, match=r"does not define get_kernel\(task_id\)"):
        load_submission(empty)


def test_other_compile_failures():
    path = fixture_path("misc_compile_failures")
    module = load_submission(path)
    msgs = {}
    for task in TASKS.values():
        r = grade_point(kernel_for_task(module, task.id), task, task.points[0], source_path=path)
        assert r.verdict is Verdict.CE, r
        msgs[task.id] = r.message
    assert msgs[1].startswith("CompilationError: num_jobs_calculator raised ZeroDivisionError")
    assert "(line 5 of misc_compile_failures.py)" in msgs[1] and "// 0" in msgs[1]
    assert msgs[2].startswith("get_kernel(2) returned a NotAKernel object, which has no .compile(task_args, "
                              "io_tensors) method")
    assert msgs[3] == ("get_kernel(3).compile(task_args, io_tensors) returned a str, not a compiled kernel "
                       "(kdt.CompiledKernel)")
    assert msgs[4].startswith("ValueError: no kernel for (1024, 128) (block 0) (line 28 of "
                              "misc_compile_failures.py)")


def test_a_contestants_internal_error_is_ce():
    """Issue 20: the front end's InternalError raised by the contestant's own .compile (or a subclass of
    it) is the contestant's error, CE; it was IE (and compiled three times) before."""
    class Broken:
        def compile(self, task_args, io_tensors):
            raise kdt.language.errors.InternalError("internal error: boom", 3, 1)

    class Mine(kdt.language.errors.InternalError):
        pass

    class Subclassed(Broken):
        def compile(self, task_args, io_tensors):
            raise Mine("internal error: boom", 3, 1)

    for obj in (Broken(), Subclassed()):
        with pytest.raises(CompileFailed) as info:
            compile_point(obj, T1, SMALL)
        assert info.value.verdict is Verdict.CE
        assert "InternalError: Line 3, Col 1, internal error: boom" in info.value.message or \
            "Mine: Line 3, Col 1, internal error: boom" in info.value.message
        assert "not your fault" not in info.value.message


@kdt.kernel(num_jobs_calculator=lambda task_args: task_args["N"] // 128)
def _fills(task_args, io_tensors):
    x = kdt.alloc_spm((128,))
    kdt.fill(x, 0.0)


def test_front_end_internal_error_is_ie(monkeypatch):
    """A bug of the front end itself (here: a visitor that fails on every constant, installed as if it
    shipped with kdt) while compiling a @kdt.kernel is IE, not the contestant's fault."""
    import judger.grading as grading
    from kdt.language.frontend import KernelBuilder

    monkeypatch.setattr(KernelBuilder, "visit_Constant", int)  # int(self, node): a TypeError without a frame
    monkeypatch.setattr(grading, "_PRISTINE_KDT", grading._kdt_namespaces())
    with pytest.raises(CompileFailed) as info:
        compile_point(_fills, T1, SMALL)
    assert info.value.verdict is Verdict.IE
    assert "not your fault" in info.value.message and "internal error: TypeError" in info.value.message


def test_the_same_front_end_failure_is_ce_when_the_submission_caused_it(monkeypatch):
    """The identical failure is CE when the submission brought it about: it replaced a front-end method
    (with a builtin, so no frame of its file shows; the kdt fingerprint differs), its own code ran on the
    way (a frame of a file outside the judge), or it replaced KernelFunction.compile on the object."""
    from kdt.language.frontend import KernelBuilder

    with monkeypatch.context() as m:
        m.setattr(KernelBuilder, "visit_Constant", int)
        with pytest.raises(CompileFailed) as info:
            compile_point(_fills, T1, SMALL)
        assert info.value.verdict is Verdict.CE
    import judger.grading as grading
    monkeypatch.setattr(KernelBuilder, "visit_Constant", lambda self, node: 1 / 0)  # a frame of this file
    monkeypatch.setattr(grading, "_PRISTINE_KDT", grading._kdt_namespaces())
    with pytest.raises(CompileFailed) as info:
        compile_point(_fills, T1, SMALL)
    assert info.value.verdict is Verdict.CE and "ZeroDivisionError" in info.value.message


# ---- RE ---------------------------------------------------------------------------------------------

def test_out_of_bounds_view_is_a_runtime_error():
    r = round_trip(grade("out_of_bounds"))
    assert r.verdict is Verdict.RE and r.score == 0.0 and r.cycles is None
    assert r.message == ("OutOfBoundsError: Line 11, kdt.load: view of 'b' (offset 12289, sizes (4096,), "
                         "strides (1,)) reaches element 16384, outside its 16384 elements "
                         "(at launch, trial 1 of 3)")


def test_spm_overflow_is_a_runtime_error():
    r = grade("spm_overflow")
    assert r.verdict is Verdict.RE
    assert r.message.startswith("SPMOverflowError: the kernel allocates 163840 bytes of SPM, more than the "
                                "SM's 131072 bytes")


# ---- WA ---------------------------------------------------------------------------------------------

def test_wrong_result_carries_the_comparisons_diagnostics():
    r = round_trip(grade("wrong_result"))
    assert r.verdict is Verdict.WA and r.score == 0.0
    assert r.cycles == 4 * 134  # the launch finished; its cycles are reported but not scored
    lines = r.message.splitlines()
    assert lines[-1] == "Incorrect result"
    assert lines[0].startswith("[c] max abs error ") and "pass 0.00%" in lines[0]


def test_unwritten_nan_output_is_wrong():
    r = grade("wrong_result", 4, 0)
    assert r.verdict is Verdict.WA
    assert r.message == ("[O] nan positions differ (first at [0, 0])\n"
                         "131072 of 131072 output elements are NaN where the reference is not: the output starts "
                         "filled with NaN, so the kernel probably never stored those elements\nIncorrect result")
    assert r.utilisation == 1024 * 128 * 2 * 128 / 1001 / (2048 * 8)


# ---- TLE --------------------------------------------------------------------------------------------

def test_simulation_timeout():
    r = round_trip(grade("slow", 1, 1, timeout=0.01))
    assert r.verdict is Verdict.TLE and r.score == 0.0 and r.cycles is None
    assert r.message.splitlines()[-1] == "Simulation timeout"
    assert "wall-clock limit" in r.message and "0.01 s per launch, trial 1 of 3" in r.message


def test_the_slow_kernel_is_valid():
    r = grade("slow", 1, 0)  # 128 jobs of 128 elements: within any limit
    assert r.verdict is Verdict.AC and r.cycles == 128 * 103


# ---- IE ---------------------------------------------------------------------------------------------

def test_a_bug_in_the_judge_is_ie():
    broken = dataclasses.replace(T1, reference=lambda io: io["missing"])
    compiled = compile_point(kernel("vadd_only", 1), T1, SMALL)
    r = round_trip(judge_compiled(compiled, broken, SMALL))
    assert r.verdict is Verdict.IE and r.score == 0.0
    assert r.message.startswith("internal error of the judge (not your fault; it will be retried): KeyError")


def test_judging_something_that_is_not_a_compiled_kernel_is_ie():
    r = judge_compiled(kernel("vadd_only", 1), T1, SMALL)  # a KernelFunction, not compiled
    assert r.verdict is Verdict.IE and "needs a kdt.CompiledKernel, got KernelFunction" in r.message


# ---- the compile / judge split ---------------------------------------------------------------------

class Spy:
    """Wraps a kernel; records the io tensors its compile saw and the torch RNG state after it."""

    def __init__(self, inner):
        self.inner = inner
        self.seen = None

    def compile(self, task_args, io_tensors):
        self.seen = {k: v.clone() for k, v in io_tensors.items()}
        return self.inner.compile(task_args, io_tensors)


def _equal(x, y):
    return list(x) == list(y) and all(torch.equal(x[k].nan_to_num(), y[k].nan_to_num())
                                      and torch.equal(x[k].isnan(), y[k].isnan()) for k in x)


@pytest.mark.parametrize("task_id", [1, 2, 3, 4])
def test_compile_sees_exactly_trial_ones_inputs_and_does_not_consume_the_rng(task_id, baseline_module):
    task = get_task(task_id)
    point = task.points[-1]
    spy = Spy(baseline_module.get_kernel(task_id))
    compile_point(spy, task, point)
    trials = list(trial_inputs(task, point))
    assert _equal(spy.seen, trials[0])
    # The contest's order: seed, trial 1's inputs, compile, (launch), trial 2's inputs ... Compiling
    # must not draw from the RNG, or judge_compiled's regenerated trials 2 and 3 would differ.
    seed_rngs()
    first = task.make_inputs(point)
    baseline_module.get_kernel(task_id).compile(point.args(), first)
    assert _equal(task.make_inputs(point), trials[1])
    assert _equal(task.make_inputs(point), trials[2])


def test_judging_an_ir_that_crossed_a_process_boundary_gives_the_same_result():
    path = fixture_path("vadd_only")
    compiled = compile_point(kernel("vadd_only", 1), T1, BIG, source_path=path)
    wire = compiled.to_json()
    # judge_compiled depends on nothing but the IR: disturb every RNG in between
    torch.manual_seed(12345)
    torch.randn(1000)
    a = judge_compiled(kdt.CompiledKernel.from_json(wire), T1, BIG)
    b = grade_point(kernel("vadd_only", 1), T1, BIG)
    assert (a.verdict, a.cycles, a.score, a.message) == (b.verdict, b.cycles, b.score, b.message) \
        == (Verdict.AC, 34304, point_score(34304, 11000), "")


def test_compile_time_is_added_to_the_timings():
    compiled = compile_point(kernel("vadd_only", 1), T1, SMALL)
    r = judge_compiled(compiled, T1, SMALL, compile_s=1.5)
    assert r.timings["compile_s"] == 1.5 and r.timings["total_s"] >= 1.5


def test_kernel_prints_go_to_print_file():
    out = iolib.StringIO()
    r = grade("prints", print_file=out)
    assert r.verdict is Verdict.AC
    assert out.getvalue() == "[Job 0] block start: []\n" * 3  # one launch per trial
    r = grade("prints")  # discarded by default
    assert r.verdict is Verdict.AC


def test_profile_records_trial_one():
    prof = kdt.Profile(jobs=range(2))
    r = grade("vadd_only", 1, 1, profile=prof)
    assert r.verdict is Verdict.AC
    assert prof.kernel_cycles == r.cycles == 34304
    assert len(prof.runs) == 256 and sorted(prof.traces) == [0, 1]
    assert [e.op for e in prof.traces[0]] == ["fill", "fill", "load", "load", "add", "store"]


# ---- get_kernel returning a dispatcher object ------------------------------------------------------

def test_dispatcher_object_picks_a_kernel_by_size():
    path = fixture_path("dispatcher")
    module = load_submission(path)
    dispatcher = kernel_for_task(module, 1)
    small = grade_point(dispatcher, T1, SMALL, source_path=path)
    big = grade_point(dispatcher, T1, BIG, source_path=path)
    assert dispatcher.chosen == ["small", "large"]
    assert (small.verdict, small.cycles, small.score) == (Verdict.AC, 2 * 166, 100.0)
    # 64 jobs of 16384 elements: load [1, 51], load [2, 52], add [52, 180], store [180, 230]
    assert (big.verdict, big.cycles, big.score) == (Verdict.AC, 64 * 230, point_score(14720, 11000))
    assert big.score == 10 + 90 * (11000 / 14720) ** 4


def test_baseline_compiles_within_each_tasks_spm(baseline_module):
    for task in TASKS.values():
        k = baseline_module.get_kernel(task.id)
        for point in task.points:
            ir = compile_point(k, task, point).ir
            spm = sum(st.spm_bytes for st in ir.storages if st.kind == "spm")
            assert spm <= task.tpu["spm_size"], (task.id, point.index, spm)


def test_baseline_file_path_constant():
    assert BASELINE.is_file()


def test_memory_error_at_import_is_a_compile_error_saying_so(tmp_path):
    hog = tmp_path / "hog.py"
    hog.write_text("import kdt\n\n\ndef grow():\n    raise MemoryError\n\n\ngrow()\n")
    with pytest.raises(CompileFailed) as info:
        load_submission(hog)
    assert info.value.message.startswith("importing the submission failed: MemoryError: out of memory "
                                         "(line 5 of hog.py)")


def test_memory_error_while_judging_propagates_to_the_service():
    hungry = dataclasses.replace(T1, reference=lambda io: (_ for _ in ()).throw(MemoryError()))
    compiled = compile_point(kernel("vadd_only", 1), T1, SMALL)
    with pytest.raises(MemoryError):
        judge_compiled(compiled, hungry, SMALL)
