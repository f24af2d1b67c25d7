"""Tests for kernel design contracts (issues 6 and 13): validate, gen, verify and their CLI.

PyPTO-Gym compatibility with contracts in its own format: test_design_pypto.py."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
import yaml
from click.testing import CliRunner

from grader.cli import main
from grader.design.contract import DTYPES, ValidationReport, validate_contract, validate_file
from grader.design.generate import GenerateError, generate_from_file, generate_skeleton
from grader.design.naming import parse_module_ref, stage_function_name
from grader.design.selftest import SELF_TEST_CASES, SPELLINGS, run_self_test, sample_contract
from grader.design.shapes import ShapeExprError, dim_names, eval_dim, eval_shape, format_shape, parse_dim, parse_shape
from grader.design.verify import VerifyError, generate_inputs, load_golden_module, verify_contract, verify_file

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES / "scaled_matmul_golden.py"
CONTRACT = FIXTURES / "scaled_matmul.yaml"


def rules_of(doc) -> set[str]:
    """The PyPTO-Gym rules (rule0..rule7) a document breaks."""
    return validate_contract(doc).rules


def warnings_of(doc) -> set[str]:
    """The extra checks that warn on a document."""
    return validate_contract(doc).warning_ids


def findings_of(doc) -> set[str]:
    """Rules broken and checks warning: what --strict fails on."""
    report = validate_contract(doc, strict=True)
    return {f.rule for f in report.failures}


def contract(spelling: str = "list") -> dict:
    return sample_contract(spelling)


def invoke(*args: str):
    return CliRunner().invoke(main, ["design", *args])


# --- validate: every rule passes and fails ---------------------------------------------------

@pytest.mark.parametrize("spelling", SPELLINGS)
def test_sample_contract_passes(spelling):
    report = validate_contract(contract(spelling), strict=True)
    assert report.status == "PASS"
    assert report.to_dict() == {"status": "PASS", "strict": True, "violations": [], "warnings": []}


@pytest.mark.parametrize("case", SELF_TEST_CASES, ids=lambda c: c.name)
def test_self_test_case_behaves(case):
    results = run_self_test((case,))
    assert [r.spelling for r in results] == list(case.spellings)
    for result in results:
        assert result.ok, (result.name, result.status, result.rules, result.warnings)


def test_self_test_covers_every_rule_and_check_in_both_spellings():
    from grader.design.extra_checks import CHECK_IDS
    from grader.design.rules import RULE_IDS

    expected = {(e, sp) for c in SELF_TEST_CASES for e in c.expect for sp in c.spellings}
    for rule in RULE_IDS:
        assert {(rule, "string"), (rule, "list")} <= expected, rule
    for check in CHECK_IDS:
        assert {(check, "string"), (check, "list")} <= expected, check
    names = " ".join(c.name for c in SELF_TEST_CASES)
    assert "phase_<j>" in names and "PyPTO-Gym form" in names
    clean = [c for c in SELF_TEST_CASES if not c.expect]
    assert len(clean) >= 8  # pass cases too, not only failures


@pytest.mark.parametrize("doc", [None, {}, [], "text", 3, {"op": "x", "module_count": 1},
                                 {"op": "x", "modules": [{}]}, {"op": "x", "module_count": 1, "modules": {}}])
def test_rule0_gate_stops_validation(doc):
    report = validate_contract(doc)
    assert report.status == "FAIL"
    assert report.rules == {"rule0"}  # nothing else runs


def test_rule0_yaml_errors_and_unreadable_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("op: [unclosed\n")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00op")
    for path in (bad, empty, binary, tmp_path / "missing.yaml", tmp_path):
        report = validate_file(path)
        assert report.rules == {"rule0"}, path
    assert "invalid YAML at line" in validate_file(bad).violations[0].message


def test_rule0_uses_safe_load(tmp_path):
    evil = tmp_path / "evil.yaml"
    evil.write_text("!!python/object/apply:os.system ['echo pwned']\n")
    assert validate_file(evil).rules == {"rule0"}


def test_rule1_primary_source_must_name_a_primary_input():
    doc = contract()
    doc["modules"][1]["inputs"][1]["name"] = "c"
    report = validate_contract(doc)
    assert report.rules == {"rule1"}
    assert "'c' is not a primary input" in str(report.violations[0])


def test_rule2_self_reference_and_unknown_module():
    doc = contract()
    doc["modules"][1]["inputs"][0]["source"] = "module_2"  # j must be < the module's id
    assert rules_of(doc) == {"rule2"}
    doc["modules"][1]["inputs"][0]["source"] = "module_0"
    assert rules_of(doc) == {"rule2"}
    del doc["modules"][1]["inputs"][0]["source"]
    assert "rule2" in rules_of(doc)


def test_rule2_module_without_an_integer_id_counts_by_position():
    doc = contract()
    del doc["modules"][0]["id"]  # module 1 by position: module_1 still resolves
    assert rules_of(doc) == set() and warnings_of(doc) == {"ids"}
    doc["modules"][1]["id"] = "two"  # module 2 by position: module_1 < 2
    assert rules_of(doc) == set()


def test_rule3_final_sources():
    doc = contract()
    doc["final_outputs"][0]["source"] = "phase_2"  # legacy spelling
    assert findings_of(doc) == set()
    doc["final_outputs"][0]["source"] = "primary"
    assert rules_of(doc) == {"rule3"}
    doc["final_outputs"].append({"name": "a_scaled", "source": "module_1"})
    doc["final_outputs"][0]["source"] = "module_2"
    assert findings_of(doc) == set()
    doc["module_count"] = "two"  # rule7's; rule3 still checks that module 2 exists
    assert rules_of(doc) == {"rule7"}


def test_rule3_missing_final_outputs_is_only_a_warning():
    doc = contract()
    del doc["final_outputs"]
    assert rules_of(doc) == set() and warnings_of(doc) == {"structure"}
    doc["final_outputs"] = []
    assert rules_of(doc) == set() and warnings_of(doc) == {"structure"}


def test_rule4_module_without_outputs():
    doc = contract()
    del doc["modules"][0]["outputs"]
    report = validate_contract(doc)
    assert "rule4" in report.rules
    assert any(v.rule == "rule4" and "modules[0]" in v.message for v in report.violations)


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("dim", [0, 7, "M", "N // 64", "(K + 1) * 2", "-M + 2 * N", "M*N-1", " M ", "((M))"])
def test_rule5_accepts(dim, spelling):
    doc = contract()
    doc["primary_inputs"][0]["shape"] = format_shape([dim]) if spelling == "string" else [dim]
    doc["composition_verification"]["shapes"] = [{"M": 4, "N": 128, "K": 4}]
    assert findings_of(doc) == set()


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("dim", ["M ** 2", "M / 2", "M % 2", "f(M)", "M.x", "M[0]", "__import__('os')", "+M",
                                 "1.5", "True", "lambda: 1", "M if N else K", "'a'", "~M", "not M", "M < N",
                                 "M; N", "(" * 300 + "M" + ")" * 300, "M" * 1001])
def test_rule5_rejects(dim, spelling):
    doc = contract()
    doc["primary_inputs"][0]["shape"] = format_shape([dim]) if spelling == "string" else [dim]
    assert rules_of(doc) == {"rule5"}


@pytest.mark.parametrize("dim", [True, None, 2.0, [1], {"M": 1}, ""])
def test_rule5_rejects_list_elements(dim):
    doc = contract()
    doc["primary_inputs"][0]["shape"] = [dim, "K"]
    assert rules_of(doc) == {"rule5"}


@pytest.mark.parametrize("shape", ["M, K", "[M, K", "M, K]", "[M, ]", "[M,,K]", "[,]", "(M, K)", "", "[M K]",
                                   None, 3, {"M": 1}])
def test_rule5_rejects_shapes(shape):
    doc = contract()
    doc["modules"][0]["outputs"][0]["shape"] = shape
    assert rules_of(doc) == {"rule5"}


def test_rule5_negative_dimension_is_syntax_only_dims_warns():
    for shape in ("[-1, K]", [-1, "K"], ["-1", "K"]):
        doc = contract()
        doc["primary_inputs"][0]["shape"] = shape
        report = validate_contract(doc)
        assert report.status == "PASS" and report.warning_ids == {"dims"}
        assert all("evaluates to -1 < 0" in w.message for w in report.warnings)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_rule6_accepts_every_listed_dtype(dtype):
    doc = contract()
    doc["primary_inputs"][2]["dtype"] = dtype
    assert rules_of(doc) == set()
    assert warnings_of(doc) == (set() if dtype in ("float32", "bool") else {"kdt_dtype"})


@pytest.mark.parametrize("dtype", ["float64", "Float32", "fp32", None, 32])
def test_rule6_rejects(dtype):
    doc = contract()
    doc["modules"][1]["outputs"][0]["dtype"] = dtype
    assert rules_of(doc) == {"rule6"}


@pytest.mark.parametrize("count", [1, 3, True, "2", 2.0])
def test_rule7_module_count(count):
    doc = contract()
    doc["module_count"] = count
    assert "rule7" in rules_of(doc)


# --- validate: the checks beyond PyPTO-Gym's rules are warnings ------------------------------

def _only_warns(doc, check: str) -> ValidationReport:
    """The document PASSes rules 0-7, warns exactly `check`, and FAILs with strict."""
    report = validate_contract(doc)
    assert report.status == "PASS" and report.violations == [] and report.warning_ids == {check}
    strict = validate_contract(doc, strict=True)
    assert strict.status == "FAIL" and {f.rule for f in strict.failures} == {check}
    return report


def test_ids_must_be_one_to_n():
    doc = contract()
    doc["modules"][1]["id"] = 3
    assert rules_of(doc) == {"rule3"}  # final output's module_2 no longer exists
    assert "ids" in warnings_of(doc)
    doc["modules"][1]["id"] = 1
    assert "ids" in warnings_of(doc)


def test_section_spellings():
    doc = contract()
    doc["modules"][0]["section"] = "VXM"
    _only_warns(doc, "section")
    del doc["modules"][0]["section"]
    _only_warns(doc, "section")


def test_fusion_flag():
    doc = contract()
    for m in doc["modules"]:
        m["section"] = "mxm"
    _only_warns(doc, "fusion")  # is_fusion true but only the cube is used
    doc["is_fusion"] = "yes"
    assert "is_fusion must be true or false" in _only_warns(doc, "fusion").warnings[0].message


def test_structure_checks():
    doc = contract()
    doc["modules"][0]["golden_stage_fn"] = "not a name"
    doc["primary_inputs"].append({"name": "a", "shape": [], "dtype": "float32"})
    doc["has_cross_core"] = "no"
    messages = [w.message for w in _only_warns(doc, "structure").warnings]
    assert len(messages) == 3
    assert any("repeats the name 'a'" in m for m in messages)


def test_verification_checks():
    doc = contract()
    doc["composition_verification"]["seeds"] = []
    doc["composition_verification"]["shapes"] = [{"M": -1}]
    messages = [w.message for w in _only_warns(doc, "verification").warnings]
    assert len(messages) == 2
    del doc["composition_verification"]
    (missing,) = _only_warns(doc, "verification").warnings
    assert missing.message.startswith("no composition_verification")


def test_atol_written_as_yaml_string_gets_a_hint():
    doc = yaml.safe_load(CONTRACT.read_text().replace("1.0e-5", "1e-5"))
    report = _only_warns(doc, "verification")
    assert "write floats with a dot" in report.warnings[0].message


def test_dims_must_be_defined_by_every_shape_case():
    doc = contract()
    doc["composition_verification"]["shapes"].append({"M": 2, "N": 2})
    report = _only_warns(doc, "dims")
    assert len(report.warnings) == 4  # a, b, scale and a_scaled use K
    assert all("shapes[2]: dimension name 'K' is not defined" in w.message for w in report.warnings)


def test_dims_division_by_zero():
    doc = contract()
    doc["primary_inputs"][2]["shape"] = "[K // (M - M)]"
    assert "division by zero" in _only_warns(doc, "dims").warnings[0].message


def test_kdt_dtype_warns_for_pypto_gym_dtypes():
    doc = contract()
    doc["primary_inputs"][0]["dtype"] = "bfloat16"
    doc["modules"][0]["outputs"][0]["dtype"] = "bool"
    (warning,) = _only_warns(doc, "kdt_dtype").warnings
    assert warning.message == "primary_inputs[0] 'a': dtype 'bfloat16': KDT tensors are float32 or bool"


def test_todo_anywhere_is_a_warning():
    doc = contract()
    doc["modules"][1]["golden_steps"] = ["out = a_scaled @ b  # TODO tile"]
    doc["TODO_notes"] = 1
    report = _only_warns(doc, "todo")
    paths = {w.message for w in report.warnings}
    assert paths == {"modules[1].golden_steps[0] still contains TODO", "TODO_notes still contains TODO"}


def test_todo_module_count_does_not_crash():
    doc = contract()
    doc["module_count"] = "TODO"
    report = validate_contract(doc)
    assert report.rules == {"rule7"} and report.warning_ids == {"todo"}


def test_golden_check_reads_the_golden_without_importing_it(tmp_path):
    doc = contract()
    golden = tmp_path / "golden.py"
    golden.write_text("raise SystemExit('imported!')\n"
                      "def scaled_matmul_golden_cpu(a, scale, b):\n    return a\n"
                      "def scaled_matmul_stage_1(a, b, scale):\n    return a\n")
    report = validate_contract(doc, golden=golden)
    assert report.status == "PASS" and report.warning_ids == {"golden"}
    messages = sorted(w.message for w in report.warnings)
    assert messages[0] == "modules[1].golden_stage_fn 'scaled_matmul_stage_12' is not a top-level function of " + str(golden)
    assert messages[1] == "scaled_matmul_golden_cpu takes (a, scale, b) but primary_inputs are (a, b, scale)"
    assert validate_contract(doc, golden=GOLDEN).warning_ids == set()
    assert "cannot read golden file" in validate_contract(doc, golden=tmp_path / "absent.py").warnings[0].message
    golden.write_text("def (:\n")
    assert "does not parse" in validate_contract(doc, golden=golden).warnings[0].message


def test_task_check_against_a_judged_task():
    from judger.contracts import get_contract

    task3 = yaml.safe_load(get_contract(3).contract.read_text())
    assert validate_contract(task3, strict=True, task=3).status == "PASS"
    task3["primary_inputs"][1]["shape"] = "[M, K // 32]"
    task3["primary_inputs"][2]["dtype"] = "float16"
    report = validate_contract(task3, task=3)
    assert report.rules == set() and report.warning_ids == {"task", "kdt_dtype"}
    task_messages = [w.message for w in report.warnings if w.rule == "task"]
    assert task_messages == [
        "As at test point 0 (M=512 N=1024 K=2560): shape [512, 80], the task's is [512, 40]",
        "Bb: dtype 'float16', the task's is 'float32'",
        "As at test point 1 (M=2048 N=512 K=3072): shape [2048, 96], the task's is [2048, 48]",
    ]
    assert validate_contract(task3, task=9).warnings[-1].message == "no judged task 9; tasks are 1, 2, 3, 4"


def test_yaml_aliases_do_not_blow_up(tmp_path):
    lines = ["a0: &a0 [TODO, TODO]"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 40)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines + ["op: x", "module_count: 1", "modules: [*a39]", "loop: &l [*l]"]) + "\n")
    report = validate_file(path)  # must finish quickly despite 2**40 logical TODOs
    assert report.status == "FAIL"


def test_file_contracts_pass():
    for name in ("scaled_matmul.yaml", "scaled_matmul_wrong_stage.yaml", "softmax.yaml"):
        assert validate_file(FIXTURES / name, strict=True).status == "PASS", name


# --- shapes and naming ----------------------------------------------------------------------

def test_parse_and_format_shapes():
    assert parse_shape("[M, N // 64]") == ["M", "N // 64"]
    assert parse_shape("  [ M ,4 ] ") == ["M", "4"]
    assert parse_shape("[]") == [] and parse_shape("[ ]") == []
    assert parse_shape(["M", 4]) == ["M", 4]
    assert format_shape(["M", 4, "K // 2"]) == "[M, 4, K // 2]"
    assert eval_shape("[M, N // 2]", {"M": 3, "N": 8}) == eval_shape(["M", "N // 2"], {"M": 3, "N": 8}) == (3, 4)
    assert eval_shape("[]", {}) == ()
    for bad in ("M, N", "[M,]", None, 3):
        with pytest.raises(ShapeExprError):
            parse_shape(bad)


def test_deep_expressions_fail_cleanly():
    deep = "-" * 999 + "M"  # within the length cap: rule5 accepts it (the checker walks iteratively)
    doc = contract()
    doc["primary_inputs"][2]["shape"] = [deep]
    assert rules_of(doc) == set()
    with pytest.raises(ShapeExprError, match="nested too deeply"):
        eval_dim(deep, {"M": 1})
    assert eval_dim("+".join(["M"] * 300), {"M": 2}) == 600


def test_eval_dim():
    env = {"M": 16, "N": 8}
    assert eval_dim("(M + N) // 3 * 2", env) == 16
    assert eval_dim(5, env) == 5
    assert dim_names("M * N - K") == {"M", "N", "K"}
    for bad in ("M // (N - 8)", "N - M", "Z"):
        with pytest.raises(ShapeExprError):
            eval_dim(bad, env)
    assert parse_dim(3) == 3 and not isinstance(parse_dim("M"), int)


def test_naming_conventions():
    assert [stage_function_name("op", k) for k in (1, 2, 3)] == ["op_stage_1", "op_stage_12", "op_stage_123"]
    assert stage_function_name("op", 10) == "op_stage_1_to_10"
    assert parse_module_ref("module_3") == parse_module_ref("phase_3") == 3
    assert parse_module_ref("module_x") is None and parse_module_ref(3) is None


# --- gen -------------------------------------------------------------------------------------

def test_gen_on_sample_golden():
    skeleton = generate_from_file(GOLDEN, "scaled_matmul")
    doc = yaml.safe_load(skeleton.yaml_text)
    assert doc["schema_version"] == 1
    assert doc["op"] == "scaled_matmul"
    assert doc["module_count"] == 2
    assert [p["name"] for p in doc["primary_inputs"]] == ["a", "b", "scale"]
    assert [m["id"] for m in doc["modules"]] == [1, 2]
    assert [m["golden_stage_fn"] for m in doc["modules"]] == ["scaled_matmul_stage_1", "scaled_matmul_stage_12"]
    assert doc["modules"][1]["outputs"][0]["name"] == "out"
    assert doc["final_outputs"] == [{"name": "out", "source": "module_2"}]
    assert doc["composition_verification"]["seeds"] == [42, 123, 456]
    assert doc["is_fusion"] == "TODO" and doc["modules"][0]["section"] == "TODO"
    report = validate_contract(doc)
    assert report.status == "FAIL"  # a skeleton never passes as is: sources and dtypes are TODO
    assert report.rules == {"rule2", "rule6"} and "todo" in report.warning_ids
    assert any("scaled_matmul_golden_cpu" in d for d in skeleton.diagnostics)


def test_gen_writes_pypto_gym_layout():
    """Keys in PyPTO-Gym's order, string shapes written double-quoted, TODO where the architect decides."""
    text = generate_from_file(GOLDEN, "scaled_matmul").yaml_text
    doc = yaml.safe_load(text)
    assert list(doc) == ["schema_version", "op", "module_count", "is_fusion", "has_cross_core", "primary_inputs",
                         "modules", "final_outputs", "composition_verification"]
    assert list(doc["modules"][0]) == ["id", "name", "description", "section", "golden_steps", "inputs", "outputs",
                                       "golden_stage_fn"]
    assert list(doc["primary_inputs"][0]) == ["name", "shape", "dtype"]
    assert "- name: a\n  shape: \"[TODO]\"\n  dtype: TODO\n" in text
    assert all(p["shape"] == "[TODO]" for p in doc["primary_inputs"])
    assert text.count('"[TODO]"') == 5  # 3 primary inputs, one output per module


def test_gen_skeleton_filled_in_passes_strict():
    """Filling the TODOs of the generated skeleton (as a person would) gives a contract that passes."""
    doc = yaml.safe_load(generate_from_file(GOLDEN, "scaled_matmul").yaml_text)
    filled = sample_contract("string")
    for key in ("is_fusion", "has_cross_core", "composition_verification"):
        doc[key] = filled[key]
    for ours, theirs in zip(doc["primary_inputs"], filled["primary_inputs"]):
        ours.update(shape=theirs["shape"], dtype=theirs["dtype"])
    for ours, theirs in zip(doc["modules"], filled["modules"]):
        for key in ("name", "description", "section", "golden_steps", "inputs"):
            ours[key] = theirs[key]
        ours["outputs"] = theirs["outputs"]
    assert doc == filled  # the generator already had the rest right
    assert validate_contract(doc, strict=True, golden=GOLDEN).status == "PASS"


def test_gen_prefers_golden_cpu_and_reads_tuple_returns():
    source = (
        "def f_golden(q, k):\n    return q\n"
        "def f_golden_cpu(q, k, v, *, causal=False):\n"
        "    def inner():\n        return 1\n"
        "    if q is None:\n        return o, lse\n    return o, lse\n"
    )
    skeleton = generate_skeleton(source, "f", modules=3)
    doc = skeleton.contract
    assert [p["name"] for p in doc["primary_inputs"]] == ["q", "k", "v"]
    assert [f["name"] for f in doc["final_outputs"]] == ["o", "lse"]
    assert [m["golden_stage_fn"] for m in doc["modules"]] == ["f_stage_1", "f_stage_12", "f_stage_123"]
    assert any("causal" in d for d in skeleton.diagnostics)
    assert any("f_stage_1, f_stage_12, f_stage_123" in d for d in skeleton.diagnostics)


def test_gen_unknowns_are_todo():
    skeleton = generate_skeleton("def g_golden(x):\n    return x + 1\n", "g")
    doc = skeleton.contract
    assert doc["module_count"] == "TODO"
    assert len(doc["modules"]) == 1
    assert doc["final_outputs"] == [{"name": "TODO", "source": "TODO"}]


@pytest.mark.parametrize("source, op", [("def other(x):\n    pass\n", "g"), ("def g_golden(:\n", "g"),
                                        ("def g_golden(x): pass\n", "not-an-op"), ("x\0", "g")])
def test_gen_errors(source, op):
    with pytest.raises(GenerateError):
        generate_skeleton(source, op)


def test_gen_cli_stdout_is_yaml_only():
    result = invoke("gen", str(GOLDEN), "--op", "scaled_matmul")
    assert result.exit_code == 0
    assert yaml.safe_load(result.stdout)["op"] == "scaled_matmul"
    assert "golden function" in result.stderr and "golden function" not in result.stdout


@pytest.mark.parametrize("args", [["missing_golden.py", "--op", "x"], [str(GOLDEN), "--op", "nope"],
                                  [str(GOLDEN), "--op", "scaled_matmul", "--modules", "0"]])
def test_gen_cli_error_prints_nothing_on_stdout(args):
    result = invoke("gen", *args)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "error" in result.stderr


# --- verify ----------------------------------------------------------------------------------

def test_verify_passes_on_correct_contract():
    report = verify_file(CONTRACT, GOLDEN)
    assert report.passed
    assert len(report.cases) == 6  # 3 seeds x 2 shapes
    assert {c.seed for c in report.cases} == {42, 123, 456}
    assert all(c.matched_ratio == 1.0 and c.max_abs_error is not None for c in report.cases)


def test_verify_fails_when_stage_functions_are_wrong():
    report = verify_file(FIXTURES / "scaled_matmul_wrong_stage.yaml", GOLDEN)
    assert not report.passed
    assert all(not c.passed and c.matched_ratio < 1.0 and c.max_abs_error > 0 for c in report.cases)


def test_verify_final_outputs_from_several_modules():
    report = verify_file(FIXTURES / "softmax.yaml", FIXTURES / "softmax_golden.py")
    assert report.passed, [c.error for c in report.cases]


def _verify_with_stage(stage_fn: str):
    doc = yaml.safe_load(CONTRACT.read_text())
    doc["modules"][1]["golden_stage_fn"] = stage_fn
    return verify_contract(doc, load_golden_module(GOLDEN))


def test_verify_reports_stage_exceptions_and_shape_errors():
    raised = _verify_with_stage("scaled_matmul_stage_12_raises")
    assert all("stage exploded" in c.error and c.matched_ratio == 0.0 for c in raised.cases)
    transposed = _verify_with_stage("scaled_matmul_stage_12_transposed")
    assert all("declared" in c.error for c in transposed.cases)


def test_verify_setup_errors(tmp_path):
    with pytest.raises(VerifyError, match="no stage function"):
        _verify_with_stage("missing_stage")
    bad = contract()
    bad["module_count"] = 3
    with pytest.raises(VerifyError, match="does not validate"):
        verify_contract(bad, load_golden_module(GOLDEN))
    unverifiable = contract("string")
    del unverifiable["composition_verification"]
    with pytest.raises(VerifyError, match="verification: no composition_verification"):
        verify_contract(unverifiable, load_golden_module(GOLDEN))
    broken = tmp_path / "broken_golden.py"
    broken.write_text("raise SystemExit('no')\n")
    with pytest.raises(VerifyError, match="importing the golden failed"):
        load_golden_module(broken)
    with pytest.raises(VerifyError, match="not found"):
        load_golden_module(tmp_path / "absent.py")


def test_generate_inputs_is_seeded_and_typed():
    entries = [{"name": "x", "shape": ["M", "N // 2"], "dtype": "float16"},
               {"name": "i", "shape": [3], "dtype": "uint8"}, {"name": "m", "shape": [], "dtype": "bool"}]
    first = generate_inputs(entries, {"M": 4, "N": 6}, seed=42)
    again = generate_inputs(entries, {"M": 4, "N": 6}, seed=42)
    other = generate_inputs(entries, {"M": 4, "N": 6}, seed=43)
    assert first[0].shape == (4, 3) and first[0].dtype == torch.float16
    assert first[0].abs().max() <= 1
    assert first[1].dtype == torch.uint8 and first[2].shape == ()
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not torch.equal(first[0], other[0])


def test_verify_cli_exit_codes_and_json():
    ok = invoke("verify", str(CONTRACT), "--golden", str(GOLDEN), "--json")
    assert ok.exit_code == 0
    payload = json.loads(ok.stdout)
    assert payload["status"] == "PASS" and len(payload["cases"]) == 6
    assert set(payload["cases"][0]) == {"status", "seed", "dims", "matched_ratio", "max_abs_error", "error"}
    wrong = invoke("verify", str(FIXTURES / "scaled_matmul_wrong_stage.yaml"), "--golden", str(GOLDEN))
    assert wrong.exit_code == 1
    assert wrong.stdout.count("FAIL  seed=") == 6 and "matched=" in wrong.stdout
    missing = invoke("verify", "absent.yaml", "--golden", str(GOLDEN))
    assert missing.exit_code == 1 and "cannot read file" in missing.stdout


# --- validate CLI ----------------------------------------------------------------------------

def test_validate_cli_pass_and_fail(tmp_path):
    ok = invoke("validate", str(CONTRACT), "--json")
    assert ok.exit_code == 0
    assert json.loads(ok.stdout) == {"status": "PASS", "strict": False, "violations": [], "warnings": []}
    doc = copy.deepcopy(yaml.safe_load(CONTRACT.read_text()))
    doc["module_count"] = 5
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    bad = invoke("validate", str(path), "--json")
    assert bad.exit_code == 1
    payload = json.loads(bad.stdout)
    assert payload["status"] == "FAIL"
    assert {"rule", "message"} == set(payload["violations"][0])
    assert "rule7" in {v["rule"] for v in payload["violations"]}
    text = invoke("validate", str(path))
    assert text.exit_code == 1 and text.stdout.startswith("FAIL\n") and "rule7: " in text.stdout
    assert text.stdout.splitlines()[-1] == "rules 0-7 (PyPTO-Gym): FAIL on rule7; extra checks: no warnings"


def test_validate_cli_warnings_and_strict(tmp_path):
    doc = yaml.safe_load(CONTRACT.read_text())
    doc["modules"][0]["section"] = "cube"  # both modules cube, is_fusion true
    path = tmp_path / "warn.yaml"
    path.write_text(yaml.safe_dump(doc))
    text = invoke("validate", str(path))
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0] == "PASS"
    assert lines[1].startswith("warning fusion: is_fusion is true but the sections used are: cube")
    assert lines[-1] == ("rules 0-7 (PyPTO-Gym): PASS; extra checks: 1 warning(s) on fusion "
                         "(fail only with --strict)")
    strict = invoke("validate", str(path), "--strict", "--json")
    assert strict.exit_code == 1
    payload = json.loads(strict.stdout)
    assert payload["status"] == "FAIL" and payload["strict"] is True and payload["violations"] == []
    assert [w["rule"] for w in payload["warnings"]] == ["fusion"]
    strict_text = invoke("validate", str(path), "--strict")
    assert strict_text.exit_code == 1
    assert strict_text.stdout.splitlines()[-1] == "rules 0-7 (PyPTO-Gym): PASS; extra checks: FAIL on fusion (--strict)"


def test_validate_cli_yaml_error_is_a_clean_fail(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("modules: [\n")
    result = invoke("validate", str(path))
    assert result.exit_code == 1
    assert "rule0:" in result.stdout and "Traceback" not in result.output


def test_validate_cli_self_test():
    result = invoke("validate", "--self-test")
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    runs = sum(len(c.spellings) for c in SELF_TEST_CASES)
    assert len(lines) == runs + 1 and all(line.startswith("PASS") for line in lines[:-1])
    assert lines[-1] == f"self-test: {runs}/{runs} cases behave"
    assert "PASS  [string] rule5: unary plus  (expect rule5; got FAIL/FAIL strict, rule5)" in lines
    assert ("PASS  [list] kdt_dtype: float16 is PyPTO-Gym's, not KDT's  (expect kdt_dtype; got PASS/FAIL strict, "
            "warning kdt_dtype)") in lines
    as_json = json.loads(invoke("validate", "--self-test", "--json").stdout)
    assert as_json["status"] == "PASS" and len(as_json["cases"]) == runs
    gym = [c for c in as_json["cases"] if c["case"].startswith("PyPTO-Gym form")]
    assert [(c["spelling"], c["status"], c["strict_status"], c["warnings"]) for c in gym] == [
        (sp, "PASS", "FAIL", ["fusion", "kdt_dtype", "verification"]) for sp in ("string", "list")]


def test_self_test_detects_a_misbehaving_case(monkeypatch):
    from grader.cli import design as design_cli
    from grader.design.selftest import SelfTestCase

    wrong = (SelfTestCase("expects rule1 but contract is fine", lambda d, s: None, ("rule1",)),)
    assert not run_self_test(wrong)[0].ok
    monkeypatch.setattr(design_cli, "run_self_test", lambda: run_self_test(wrong))
    result = invoke("validate", "--self-test")
    assert result.exit_code == 1 and result.stdout.startswith("FAIL")


def test_validate_cli_usage_errors():
    assert invoke("validate").exit_code == 2
    assert invoke("validate", str(CONTRACT), "--self-test").exit_code == 2
    assert invoke("validate", str(CONTRACT), "--task", "x").exit_code == 2


def test_self_test_misjudged_warning_is_caught():
    from grader.design.selftest import SelfTestCase

    # a warning case that actually breaks a rule, and a clean case that warns, both misbehave
    assert not run_self_test((SelfTestCase("warns only?", lambda d, s: d.update(module_count=9), ("ids",)),))[0].ok
    assert not run_self_test((SelfTestCase("clean?", lambda d, s: d.update(is_fusion=False)),))[0].ok


# --- robustness: any value anywhere is a finding, never a crash -------------------------------

_WEIRD = [None, [], {}, [1], {"a": 1}, 1.5, True, "x", ["x"], [[1]], {"k": [1]}, -3, "[M, ]", "TODO"]


def _leaf_paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaf_paths(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaf_paths(item, path + (i,))


def _replaced(doc, path, value):
    doc = copy.deepcopy(doc)
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_validate_never_raises_on_odd_values(spelling, tmp_path):
    """Every position of the sample contract replaced by each odd value: validation (strict, with
    the golden check) returns a report; the rules and checks report, they do not crash."""
    base = contract(spelling)
    statuses = set()
    for path in list(_leaf_paths(base))[1:]:
        for value in _WEIRD:
            report = validate_contract(_replaced(base, path, value), strict=True, golden=GOLDEN)
            statuses.add(report.status)
    assert statuses == {"PASS", "FAIL"}  # some replacements are harmless (a description "x")


def test_task_check_never_raises_on_odd_values():
    base = yaml.safe_load((Path(__file__).parents[3] / "judger/contracts/task1_vector_add/module_interfaces.yaml")
                          .read_text())
    for path in [("primary_inputs", 0, "name"), ("primary_inputs", 0, "shape"), ("primary_inputs", 1, "dtype"),
                 ("modules", 0, "id"), ("final_outputs", 0, "source"), ("final_outputs", 0, "name"),
                 ("modules", 0, "outputs", 0, "shape")]:
        for value in _WEIRD:
            report = validate_contract(_replaced(base, path, value), task=1)
            assert report.status in ("PASS", "FAIL")
            if path[-1] in ("name", "shape") and value != base["primary_inputs"][0]["shape"]:
                assert "task" in report.warning_ids or report.rules, (path, value)  # never silently accepted
