"""The design contracts of the four judged tasks (issue 6) and `kdt-grade design check`.

This module is how CI runs `validate`, `verify` and `check` on the four task contracts: `.ci/run`
runs the whole test suite, and for every task in `judger/contracts/` the tests below run
- `kdt-grade design validate --strict --golden ... --task N judger/contracts/task<N>_<op>/module_interfaces.yaml` (PASS),
- `kdt-grade design verify ... --golden judger/contracts/task<N>_<op>/golden.py`             (PASS),
- `kdt-grade design check ... --kernel submissions/examples/optimized.py --task N`           (PASS,
  with the units the kernel really uses),
- `kdt-grade design gen .../golden.py --op <op>` (the skeleton's names agree with the contract).
They also show contracts that must fail: verification with wrong stage functions (attention with
the plain softmax update instead of the online recurrence; task 3 with `repeat` for
`repeat_interleave`), and check with sections that the kernel does not match (task 3 declared
cube-only, task 2 declared fused, task 1 declared cube), plus check's own error paths.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
import yaml
from click.testing import CliRunner

import kdt
from grader.cli import main
from grader.design.check import CheckReport, check_contract, check_file, compare_units, units_used
from grader.design.contract import validate_contract, validate_file
from grader.design.verify import load_golden_module, verify_contract, verify_file
from judger.contracts import CONTRACTS, get_contract
from judger.grading import trial_inputs
from judger.tasks import COS_DIFF_TOL, TASKS

ROOT = Path(__file__).resolve().parents[3]
OPTIMIZED = ROOT / "submissions" / "examples" / "optimized.py"
FIXTURES = Path(__file__).parent / "fixtures"
TASK_IDS = sorted(CONTRACTS)

# What the optimized kernels really run (their design comments): task 1 adds on the VXM, task 2
# multiplies on the MXM, tasks 3 and 4 use both.
EXPECTED_UNITS = {1: ["VXM"], 2: ["MXM"], 3: ["MXM", "VXM"], 4: ["MXM", "VXM"]}
EXPECTED_MODULES = {
    1: [("add_tiles", "vector")],
    2: [("matmul_accumulate", "cube")],
    3: [("scale", "vector"), ("matmul_accumulate", "cube")],
    4: [("scores", "cube"), ("online_softmax", "vector"), ("block_pv", "cube"), ("rescale_accumulate", "vector")],
}


def invoke(*args: str):
    return CliRunner().invoke(main, ["design", *map(str, args)])


def load(task_id: int) -> dict:
    return yaml.safe_load(get_contract(task_id).contract.read_text())


@pytest.fixture(scope="module")
def optimized_reports() -> dict[int, CheckReport]:
    """`check` of every task contract against optimized.py, run once for the module."""
    return {t: check_file(get_contract(t).contract, OPTIMIZED, t) for t in TASK_IDS}


# --- the registry and the files --------------------------------------------------------------

def test_every_judged_task_has_a_contract():
    assert TASK_IDS == sorted(TASKS)
    for task_id in TASK_IDS:
        entry = get_contract(task_id)
        assert entry.directory.name == f"task{task_id}_{entry.op}"
        for path in (entry.golden, entry.contract, entry.design):
            assert path.is_file(), path
        assert load(task_id)["op"] == entry.op
    with pytest.raises(KeyError, match="no contract for task 5"):
        get_contract(5)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_module_table_matches_the_method(task_id):
    doc = load(task_id)
    assert [(m["name"], m["section"]) for m in doc["modules"]] == EXPECTED_MODULES[task_id]
    assert doc["is_fusion"] is (len(EXPECTED_UNITS[task_id]) == 2)
    assert [p["name"] for p in doc["primary_inputs"]] == [n for n in TASKS[task_id].inputs
                                                          if n != TASKS[task_id].output]
    assert [f["name"] for f in doc["final_outputs"]] == [TASKS[task_id].output]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_design_md_has_section_0(task_id):
    text = get_contract(task_id).design.read_text()
    assert "## §0" in text
    for needle in ("| target", "| unit", "Why not fewer modules", "Reduction axis and SPM capacity", "Dataflow"):
        assert needle in text, needle
    for module in load(task_id)["modules"]:
        assert f"`{module['name']}`" in text


# --- the golden modules ----------------------------------------------------------------------

@pytest.mark.parametrize("task_id", TASK_IDS)
def test_golden_is_the_judger_reference_and_stages_reproduce_it_at_test_point_0(task_id):
    """On test point 0's own inputs, the golden is the judger's reference and the last stage
    matches it within the judge's tolerances (check_is_allclose)."""
    task, entry = TASKS[task_id], get_contract(task_id)
    golden = load_golden_module(entry.golden)
    io = next(trial_inputs(task, task.points[0], trials=1))
    args = [io[n] for n in task.inputs if n != task.output]
    expected = task.expected(io)
    assert torch.equal(getattr(golden, f"{entry.op}_golden_cpu")(*args), expected)
    last = load(task_id)["modules"][-1]["golden_stage_fn"]
    with torch.no_grad():
        composed = getattr(golden, last)(*args)
    abs_tol, rel_tol = task.tolerances
    assert kdt.utils.check_is_allclose(task.output, composed, expected, abs_tol, rel_tol, COS_DIFF_TOL)


# --- gen on each golden ----------------------------------------------------------------------

@pytest.mark.parametrize("task_id", TASK_IDS)
def test_gen_on_each_task_golden(task_id):
    entry = get_contract(task_id)
    result = invoke("gen", entry.golden, "--op", entry.op)
    assert result.exit_code == 0, result.output
    skeleton = yaml.safe_load(result.stdout)
    doc = load(task_id)
    assert skeleton["op"] == entry.op
    assert skeleton["module_count"] == doc["module_count"] == len(EXPECTED_MODULES[task_id])
    assert [p["name"] for p in skeleton["primary_inputs"]] == [p["name"] for p in doc["primary_inputs"]]
    assert [m["golden_stage_fn"] for m in skeleton["modules"]] == [m["golden_stage_fn"] for m in doc["modules"]]
    assert skeleton["final_outputs"] == doc["final_outputs"]
    assert [o["name"] for o in skeleton["modules"][-1]["outputs"]] == [TASKS[task_id].output]
    report = validate_contract(skeleton)
    assert report.status == "FAIL" and "todo" in report.warning_ids  # a person fills in the rest
    assert all(p["shape"] == "[TODO]" for p in skeleton["primary_inputs"])  # PyPTO-Gym's string shapes
    assert f"{entry.op}_golden_cpu" in result.stderr


# --- validate and verify each contract -------------------------------------------------------

@pytest.mark.parametrize("task_id", TASK_IDS)
def test_validate_each_task_contract(task_id):
    """Strictly: rules 0-7 and every extra check, the golden and the task included."""
    entry = get_contract(task_id)
    assert validate_file(entry.contract, strict=True, golden=entry.golden, task=task_id).status == "PASS"
    result = invoke("validate", entry.contract, "--strict", "--golden", entry.golden, "--task", task_id, "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"status": "PASS", "strict": True, "violations": [], "warnings": []}
    text = invoke("validate", entry.contract, "--strict")
    assert text.exit_code == 0
    assert text.stdout == "PASS\nrules 0-7 (PyPTO-Gym): PASS; extra checks: no warnings\n"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_task_contracts_are_in_pypto_gym_layout(task_id):
    """Shapes written as PyPTO-Gym writes them (strings), keys in its order."""
    doc = load(task_id)
    shaped = doc["primary_inputs"] + [o for m in doc["modules"] for o in m["outputs"]]
    assert all(isinstance(e["shape"], str) and e["shape"].startswith("[") for e in shaped)
    assert list(doc) == ["schema_version", "op", "module_count", "is_fusion", "has_cross_core", "primary_inputs",
                         "modules", "final_outputs", "composition_verification"]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_verify_each_task_contract(task_id):
    entry = get_contract(task_id)
    report = verify_file(entry.contract, entry.golden)
    cv = load(task_id)["composition_verification"]
    assert report.passed, [(c.dims, c.error, c.max_abs_error) for c in report.cases]
    assert len(report.cases) == len(cv["seeds"]) * len(cv["shapes"])
    assert all(c.matched_ratio == 1.0 for c in report.cases)
    result = invoke("verify", entry.contract, "--golden", entry.golden)
    assert result.exit_code == 0 and f"PASS: {entry.op}:" in result.stdout


def test_attention_verification_uses_several_key_blocks():
    """The plain update can only be caught with more than one key block of 128."""
    shapes = load(4)["composition_verification"]["shapes"]
    assert any(s["S_kv"] // 128 >= 4 for s in shapes)


# --- contracts that fail verification: wrong stage functions -----------------------------------

def _with_stages(task_id: int, suffix: str, first: int) -> dict:
    doc = load(task_id)
    for module in doc["modules"][first:]:
        module["golden_stage_fn"] += suffix
    return doc


def test_verify_fails_attention_with_the_plain_softmax_update():
    doc = _with_stages(4, "_plain", first=1)  # modules 2-4 without the online rescaling
    assert validate_contract(doc).status == "PASS"  # structurally fine: only running it finds the bug
    report = verify_contract(doc, load_golden_module(FIXTURES / "flash_attention_plain_golden.py"))
    assert not report.passed
    for case in report.cases:
        several_blocks = case.dims["S_kv"] > 128
        assert case.error is None
        assert case.passed is not several_blocks, case.dims  # exact with one block, wrong with several
        if several_blocks:
            assert case.matched_ratio < 1.0 and case.max_abs_error > 1e-5


def test_verify_cli_fails_attention_plain_update(tmp_path):
    path = tmp_path / "module_interfaces.yaml"
    path.write_text(yaml.safe_dump(_with_stages(4, "_plain", first=1), sort_keys=False))
    result = invoke("verify", path, "--golden", FIXTURES / "flash_attention_plain_golden.py", "--json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["status"] == "FAIL"
    assert {c["status"] for c in payload["cases"] if c["dims"]["S_kv"] > 128} == {"FAIL"}


def test_verify_fails_scaled_matmul_with_repeat_instead_of_repeat_interleave():
    doc = _with_stages(3, "_repeat", first=0)
    report = verify_contract(doc, load_golden_module(FIXTURES / "scaled_matmul_repeat_golden.py"))
    assert not report.passed
    assert all(not c.passed and c.error is None and c.matched_ratio < 1.0 for c in report.cases)


def test_verify_fails_when_a_stage_drops_the_scaling():
    """Task 3's module 2 fed with the unscaled inputs (stage 12 = Ab @ Bb)."""
    doc = load(3)
    doc["modules"][1]["golden_stage_fn"] = "matmul_accumulate_of_raw_inputs"
    golden = load_golden_module(get_contract(3).golden)
    golden.matmul_accumulate_of_raw_inputs = lambda Ab, As, Bb, Bs: golden.matmul_accumulate(Ab, Bb)
    report = verify_contract(doc, golden)
    assert not report.passed and all(c.max_abs_error > 1e-3 for c in report.cases)


# --- check each contract against optimized.py -------------------------------------------------

@pytest.mark.parametrize("task_id", TASK_IDS)
def test_check_each_task_contract_against_optimized(optimized_reports, task_id):
    report = optimized_reports[task_id]
    assert report.passed, [str(v) for v in report.violations]
    assert report.used_units == EXPECTED_UNITS[task_id]
    assert report.point == 0 and report.task_args == TASKS[task_id].points[0].task_args
    assert report.traced_jobs == report.jobs  # every job traced by default
    assert report.output_correct is True
    assert report.kernel_cycles <= TASKS[task_id].points[0].threshold  # the standard solution scores 100
    assert report.spm_bytes <= report.spm_size
    for unit in ("MXM", "VXM"):
        row = report.units[unit]
        assert (row.busy_cycles > 0) is row.used is (unit in EXPECTED_UNITS[task_id])
        assert (row.instructions > 0) is row.used
        assert 0.0 <= row.utilisation <= 1.0
    assert report.units["MEM"].busy_cycles > 0 and report.units["ISU"].instructions is None
    sections = {"cube": "MXM", "vector": "VXM"}
    assert sorted(sections[s] for s in report.sections) == EXPECTED_UNITS[task_id]
    assert (report.mxm_peak_utilisation is None) is (task_id == 1)


def test_check_known_numbers(optimized_reports):
    """The figures of optimized.py's design comments, as the check reports them."""
    assert optimized_reports[1].kernel_cycles == 230
    assert optimized_reports[2].kernel_cycles == 22482
    assert optimized_reports[3].kernel_cycles == 22611
    assert optimized_reports[4].kernel_cycles == 4696
    assert optimized_reports[2].mxm_peak_utilisation == pytest.approx(0.911, abs=5e-4)
    # task 3: MXM 20480 and VXM 5120 busy cycles per job, 32 jobs
    assert optimized_reports[3].units["MXM"].busy_cycles == 32 * 20480
    assert optimized_reports[3].units["VXM"].busy_cycles == 32 * 5120
    assert optimized_reports[4].sections == {"cube": [1, 3], "vector": [2, 4]}


@pytest.mark.parametrize("task_id", [3, 4])
def test_check_cli_json(task_id):
    entry = get_contract(task_id)
    result = invoke("check", entry.contract, "--kernel", OPTIMIZED, "--task", task_id, "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["status"] == "PASS" and payload["violations"] == []
    assert payload["units_used"] == ["MXM", "VXM"] and payload["is_fusion"] is True
    assert set(payload["units"]) == {"MXM", "VXM", "MEM", "ISU"}
    assert set(payload["units"]["MXM"]) == {"used", "busy_cycles", "utilisation", "instructions", "modules"}
    assert payload["kernel_cycles"] > 0 and payload["output_correct"] is True


def test_check_cli_text():
    result = invoke("check", get_contract(2).contract, "--kernel", OPTIMIZED, "--task", 2)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "PASS"
    assert "kernel cycles: 22482" in result.stdout and "all jobs traced" in result.stdout
    mxm = next(line for line in lines if line.startswith("MXM"))
    vxm = next(line for line in lines if line.startswith("VXM"))
    assert "yes" in mxm and "655360" in mxm and "91.1%" in mxm and "cube: module(s) 1" in mxm
    assert "no vector module" in vxm
    assert "is_fusion: declared false" in result.stdout


def test_check_trace_jobs_limits_the_trace():
    report = check_file(get_contract(2).contract, OPTIMIZED, 2, trace_jobs=4)
    assert report.passed and report.jobs == 32 and report.traced_jobs == 4
    assert report.units["MXM"].busy_cycles == 4 * 20480
    result = invoke("check", get_contract(2).contract, "--kernel", OPTIMIZED, "--task", 2, "--trace-jobs", 4)
    assert result.exit_code == 0 and "jobs 0..3 of 32 traced" in result.stdout


def test_check_other_test_point():
    report = check_file(get_contract(4).contract, OPTIMIZED, 4, point=1)
    assert report.passed and report.task_args == {"S_qo": 1024, "S_kv": 2048, "D": 128}
    assert report.kernel_cycles == 34898


# --- contracts that fail check ----------------------------------------------------------------

def _cube_only_scaled_matmul() -> dict:
    """Task 3 claimed as one cube module (scale folded into the matmul), not fused."""
    doc = load(3)
    module = copy.deepcopy(doc["modules"][1])
    module.update(id=1, name="scaled_matmul", golden_stage_fn="scaled_matmul_stage_1_whole",
                  inputs=[{"name": n, "source": "primary"} for n in ("Ab", "As", "Bb", "Bs")])
    doc.update(module_count=1, is_fusion=False, modules=[module], final_outputs=[{"name": "C", "source": "module_1"}])
    return doc


def test_check_fails_task3_claimed_cube_only(tmp_path):
    doc = _cube_only_scaled_matmul()
    assert validate_contract(doc).status == "PASS"  # consistent on paper
    report = check_contract(doc, OPTIMIZED, 3)
    assert report.status == "FAIL"
    assert report.rules == {"unit", "fusion"}
    messages = " | ".join(str(v) for v in report.violations)
    assert "uses the VXM, but no module declares section vector" in messages
    assert "is_fusion is false, but the kernel uses both MXM and VXM" in messages
    assert report.units["VXM"].used and report.units["VXM"].modules == []
    path = tmp_path / "cube_only.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = invoke("check", path, "--kernel", OPTIMIZED, "--task", 3)
    assert result.exit_code == 1
    assert result.stdout.startswith("FAIL\n") and "unit: " in result.stdout and "fusion: " in result.stdout


def test_check_fails_task2_claimed_fused():
    doc = load(3)  # a vector + cube contract, checked against the pure-MXM matmul kernel
    report = check_contract(doc, OPTIMIZED, 2)
    assert report.rules == {"unit", "fusion", "task"}  # task 3's inputs are not task 2's
    assert any(v.rule == "task" and v.message == "primary_inputs are (Ab, As, Bb, Bs); task 2 has (A, B)"
               for v in report.violations)
    assert any("module(s) 1 declare section vector, but the kernel runs no VXM" in v.message
               for v in report.violations)
    assert any("but the kernel uses only the MXM" in v.message for v in report.violations)


def test_check_fails_task1_claimed_cube():
    doc = load(1)
    doc["modules"][0]["section"] = "mxm"
    report = check_contract(doc, OPTIMIZED, 1)
    assert report.rules == {"unit"}  # both single-unit: is_fusion false is right
    assert len(report.violations) == 2  # cube declared but unused; VXM used but undeclared


def test_check_fails_on_extra_check_warnings(tmp_path):
    """check judges a KDT kernel: warnings of validate (here kdt_dtype and fusion) fail it, before the kernel runs."""
    doc = load(1)
    doc["primary_inputs"][0]["dtype"] = "float16"
    doc["is_fusion"] = True
    assert validate_contract(doc).status == "PASS"  # PyPTO-Gym's rules are satisfied
    report = check_contract(doc, tmp_path / "never_imported.py", 1)
    assert report.status == "FAIL" and report.rules == {"kdt_dtype", "fusion"} and report.kernel_cycles is None


def test_check_reports_shapes_that_do_not_fit_the_task():
    doc = load(2)
    doc["primary_inputs"][1]["shape"] = "[N, K]"  # B is [K, N]
    report = check_contract(doc, OPTIMIZED, 2)
    assert report.rules == {"task"} and report.kernel_cycles == 22482  # measured all the same
    assert [v.message for v in report.violations] == [
        "B at test point 0 (M=512 N=1024 K=2560): shape [1024, 2560], the task's is [2560, 1024]",
        "B at test point 1 (M=2048 N=512 K=3072): shape [512, 3072], the task's is [3072, 512]",
    ]


def test_check_invalid_contract_stops_before_the_kernel(tmp_path):
    doc = load(4)
    doc["module_count"] = 3
    report = check_contract(doc, tmp_path / "never_imported.py", 4)
    assert "rule7" in report.rules and report.kernel_cycles is None and report.units == {}
    missing = check_file(tmp_path / "absent.yaml", OPTIMIZED, 4)
    assert missing.rules == {"rule0"}
    result = invoke("check", tmp_path / "absent.yaml", "--kernel", OPTIMIZED, "--task", 4, "--json")
    assert result.exit_code == 1 and json.loads(result.stdout)["violations"][0]["rule"] == "rule0"


# --- compare_units without a simulation ------------------------------------------------------

@pytest.mark.parametrize("sections, fusion, used, rules", [
    (["vector"], False, {"VXM"}, set()),
    (["cube"], False, {"MXM"}, set()),
    (["vxm", "mxm"], True, {"MXM", "VXM"}, set()),
    (["cube", "vector", "cube"], True, {"MXM", "VXM"}, set()),
    (["cube"], False, {"MXM", "VXM"}, {"unit", "fusion"}),
    (["vector", "cube"], True, {"MXM"}, {"unit", "fusion"}),
    (["vector"], False, {"MXM"}, {"unit"}),
    (["vector"], False, set(), {"unit"}),
])
def test_compare_units(sections, fusion, used, rules):
    contract = {"is_fusion": fusion, "modules": [{"id": i + 1, "section": s} for i, s in enumerate(sections)]}
    assert {v.rule for v in compare_units(contract, used)} == rules


def test_units_used_from_a_profile_summary():
    summary = {"instructions": {"MEM": 3, "VXM": 0, "MXM": 2, "FREE": 1},
               "busy_cycles": {"ISU": 5, "MEM": 9, "VXM": 0, "MXM": 7}}
    assert units_used(summary) == {"MXM"}
    summary["instructions"]["VXM"] = 1
    assert units_used(summary) == {"MXM", "VXM"}
    assert units_used({"instructions": {}, "busy_cycles": {}}) == set()


# --- check's error paths ----------------------------------------------------------------------

_HEADER = "import kdt\n\n\ndef _one(task_args):\n    return 1\n\n\n"


def _submission(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "submission.py"
    path.write_text(_HEADER + body)
    return path


def test_check_reports_load_compile_and_launch_failures(tmp_path):
    contract = get_contract(1).contract
    broken = _submission(tmp_path, "raise RuntimeError('boom at import')\n")
    assert check_file(contract, broken, 1).rules == {"load"}
    unsolved = _submission(tmp_path, "def get_kernel(t):\n    return None\n")
    report = check_file(contract, unsolved, 1)
    assert report.rules == {"compile"} and "does not solve task 1" in report.violations[0].message
    overflow = _submission(tmp_path, (
        "@kdt.kernel(num_jobs_calculator=_one)\n"
        "def k(task_args, io_tensors):\n"
        "    x = kdt.alloc_spm((65536,))\n"  # 256 KiB > task 1's 128 KiB
        "    kdt.add(x, x, x)\n\n\n"
        "def get_kernel(t):\n    return k\n"))
    report = check_file(contract, overflow, 1)
    assert report.rules == {"launch"} and "SPM" in report.violations[0].message
    assert report.spm_bytes == 256 * 1024 and report.kernel_cycles is None


def test_check_wrong_kernel_output_is_reported_but_not_a_contract_rule(tmp_path):
    """A kernel that uses the VXM as declared but computes a - b: check PASSes (units are right)
    and says the output differs; correctness is the judge's job."""
    wrong = _submission(tmp_path, (
        "@kdt.kernel(num_jobs_calculator=_one)\n"
        "def k(task_args, io_tensors):\n"
        "    a = kdt.alloc_spm((1024,))\n"
        "    b = kdt.alloc_spm((1024,))\n"
        "    n = task_args['N'] // 1024\n"
        "    for i in range(n):\n"
        "        kdt.load(io_tensors['a'][i * 1024:(i + 1) * 1024], a)\n"
        "        kdt.load(io_tensors['b'][i * 1024:(i + 1) * 1024], b)\n"
        "        kdt.sub(a, b, a)\n"
        "        kdt.store(a, io_tensors['c'][i * 1024:(i + 1) * 1024])\n\n\n"
        "def get_kernel(t):\n    return k\n"))
    report = check_file(get_contract(1).contract, wrong, 1)
    assert report.passed and report.output_correct is False
    result = invoke("check", get_contract(1).contract, "--kernel", wrong, "--task", 1)
    assert result.exit_code == 0 and "DIFFERS from the reference" in result.stdout


@pytest.mark.parametrize("kwargs, match", [({"task_id": 5}, "no task 5"), ({"point": 4}, "test points 0..3"),
                                           ({"trace_jobs": 0}, "trace_jobs")])
def test_check_argument_errors(kwargs, match):
    args = {"task_id": 4, "point": 0, "trace_jobs": None} | kwargs
    with pytest.raises(ValueError, match=match):
        check_file(get_contract(4).contract, OPTIMIZED, args["task_id"], point=args["point"],
                   trace_jobs=args["trace_jobs"])


def test_check_cli_usage_errors():
    contract = get_contract(4).contract
    assert invoke("check", contract, "--kernel", OPTIMIZED, "--task", 9).exit_code == 2
    assert invoke("check", contract, "--kernel", OPTIMIZED, "--task", 4, "--point", 7).exit_code == 2
    assert invoke("check", contract, "--task", 4).exit_code == 2  # --kernel is required
    assert invoke("check", contract, "--kernel", OPTIMIZED).exit_code == 2  # --task is required


def test_check_json_stays_clean_when_the_submission_prints(tmp_path):
    chatty = _submission(tmp_path, (
        "print('hello from the import')\n\n\n"
        "@kdt.kernel(num_jobs_calculator=_one)\n"
        "def k(task_args, io_tensors):\n"
        "    a = kdt.alloc_spm((16384,))\n"
        "    b = kdt.alloc_spm((16384,))\n"
        "    kdt.load(io_tensors['a'], a)\n"
        "    kdt.load(io_tensors['b'], b)\n"
        "    kdt.add(a, b, a)\n"
        "    kdt.print(a[0:0], msg='job')\n"
        "    kdt.store(a, io_tensors['c'])\n\n\n"
        "def get_kernel(t):\n    return k\n"))
    result = invoke("check", get_contract(1).contract, "--kernel", chatty, "--task", 1, "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["status"] == "PASS" and payload["output_correct"] is True
    assert payload["units"]["VXM"]["instructions"] == 1
    assert "hello from the import" in result.stderr and "[Job 0] job" in result.stderr
