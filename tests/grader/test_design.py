"""Tests for kernel design contracts (issue 6): validate, gen, verify and their CLI."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
import yaml
from click.testing import CliRunner

from grader.cli import main
from grader.design.contract import DTYPES, validate_contract, validate_file
from grader.design.generate import GenerateError, generate_from_file, generate_skeleton
from grader.design.naming import parse_module_ref, stage_function_name
from grader.design.selftest import SELF_TEST_CASES, run_self_test, sample_contract
from grader.design.shapes import ShapeExprError, dim_names, eval_dim, parse_dim
from grader.design.verify import VerifyError, generate_inputs, load_golden_module, verify_contract, verify_file

FIXTURES = Path(__file__).parent / "fixtures" / "design"
GOLDEN = FIXTURES / "scaled_matmul_golden.py"
CONTRACT = FIXTURES / "scaled_matmul.yaml"


def rules_of(doc) -> set[str]:
    return validate_contract(doc).rules


def contract() -> dict:
    return sample_contract()


def invoke(*args: str):
    return CliRunner().invoke(main, ["design", *args])


# --- validate: every rule passes and fails ---------------------------------------------------

def test_sample_contract_passes():
    report = validate_contract(contract())
    assert report.status == "PASS"
    assert report.to_dict() == {"status": "PASS", "violations": []}


@pytest.mark.parametrize("case", SELF_TEST_CASES, ids=lambda c: c.name)
def test_self_test_case_behaves(case):
    (result,) = run_self_test((case,))
    assert result.ok, (case.name, result.status, result.rules)


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


def test_rule3_final_sources():
    doc = contract()
    doc["final_outputs"][0]["source"] = "phase_2"  # legacy spelling
    assert rules_of(doc) == set()
    doc["final_outputs"][0]["source"] = "primary"
    assert rules_of(doc) == {"rule3"}
    doc["final_outputs"].append({"name": "a_scaled", "source": "module_1"})
    doc["final_outputs"][0]["source"] = "module_2"
    assert rules_of(doc) == set()


def test_rule4_module_without_outputs():
    doc = contract()
    del doc["modules"][0]["outputs"]
    report = validate_contract(doc)
    assert "rule4" in report.rules
    assert any(v.rule == "rule4" and "modules[0]" in v.message for v in report.violations)


@pytest.mark.parametrize("dim", [0, 7, "M", "N // 64", "(K + 1) * 2", "-M", "+M", "M*N-1", " M "])
def test_rule5_accepts(dim):
    doc = contract()
    doc["primary_inputs"][0]["shape"] = [dim]
    doc["composition_verification"]["shapes"] = [{"M": 4, "N": 128, "K": 4}]
    assert rules_of(doc) == set()


@pytest.mark.parametrize("dim", ["M ** 2", "M / 2", "M % 2", "f(M)", "M.x", "M[0]", "__import__('os')",
                                 "1.5", "True", "", "lambda: 1", "M if N else K", "'a'", "~M", "not M",
                                 -1, True, None, 2.0, [1], "M; N", "(" * 300 + "M" + ")" * 300])
def test_rule5_rejects(dim):
    doc = contract()
    doc["primary_inputs"][0]["shape"] = [dim]
    assert "rule5" in rules_of(doc)


def test_rule5_shape_not_a_list():
    doc = contract()
    doc["modules"][0]["outputs"][0]["shape"] = "M, K"
    assert rules_of(doc) == {"rule5"}


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_rule6_accepts_every_listed_dtype(dtype):
    doc = contract()
    doc["primary_inputs"][2]["dtype"] = dtype
    assert rules_of(doc) == set()


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


# --- validate: the checks beyond the original ------------------------------------------------

def test_ids_must_be_one_to_n():
    doc = contract()
    doc["modules"][1]["id"] = 3
    assert "ids" in rules_of(doc)
    doc["modules"][1]["id"] = 1
    assert "ids" in rules_of(doc)


def test_section_spellings():
    doc = contract()
    doc["modules"][0]["section"] = "VXM"
    assert rules_of(doc) == {"section"}


def test_fusion_flag():
    doc = contract()
    for m in doc["modules"]:
        m["section"] = "mxm"
    assert rules_of(doc) == {"fusion"}  # is_fusion true but only the cube is used
    doc["is_fusion"] = "yes"
    assert rules_of(doc) == {"fusion"}


def test_structure_checks():
    doc = contract()
    doc["modules"][0]["golden_stage_fn"] = "not a name"
    doc["composition_verification"]["seeds"] = []
    doc["primary_inputs"].append({"name": "a", "shape": [], "dtype": "float32"})
    messages = [v.message for v in validate_contract(doc).violations if v.rule == "structure"]
    assert len(messages) == 3
    assert any("repeats the name 'a'" in m for m in messages)


def test_atol_written_as_yaml_string_gets_a_hint():
    doc = yaml.safe_load(CONTRACT.read_text().replace("1.0e-5", "1e-5"))
    report = validate_contract(doc)
    assert report.rules == {"structure"}
    assert "write floats with a dot" in report.violations[0].message


def test_dims_must_be_defined_by_every_shape_case():
    doc = contract()
    doc["composition_verification"]["shapes"].append({"M": 2, "N": 2})
    report = validate_contract(doc)
    assert report.rules == {"dims"}
    assert all("shapes[2] does not define K" in v.message for v in report.violations)


def test_todo_anywhere_is_a_violation():
    doc = contract()
    doc["modules"][1]["golden_steps"] = ["out = a_scaled @ b  # TODO tile"]
    doc["TODO_notes"] = 1
    report = validate_contract(doc)
    assert report.rules == {"todo"}
    paths = {v.message for v in report.violations}
    assert paths == {"modules[1].golden_steps[0] still contains TODO", "TODO_notes still contains TODO"}


def test_todo_module_count_does_not_crash():
    doc = contract()
    doc["module_count"] = "TODO"
    report = validate_contract(doc)
    assert report.rules == {"rule7", "todo"}


def test_yaml_aliases_do_not_blow_up(tmp_path):
    lines = ["a0: &a0 [TODO, TODO]"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 40)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines + ["op: x", "module_count: 1", "modules: [*a39]", "loop: &l [*l]"]) + "\n")
    report = validate_file(path)  # must finish quickly despite 2**40 logical TODOs
    assert report.status == "FAIL"


def test_file_contracts_pass():
    for name in ("scaled_matmul.yaml", "scaled_matmul_wrong_stage.yaml", "softmax.yaml"):
        assert validate_file(FIXTURES / name).status == "PASS", name


# --- shapes and naming ----------------------------------------------------------------------

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
    assert "todo" in validate_contract(doc).rules  # a skeleton never passes as is
    assert any("scaled_matmul_golden_cpu" in d for d in skeleton.diagnostics)


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
    assert json.loads(ok.stdout) == {"status": "PASS", "violations": []}
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
    assert len(lines) == len(SELF_TEST_CASES) + 1 and all(line.startswith("PASS") for line in lines[:-1])
    as_json = json.loads(invoke("validate", "--self-test", "--json").stdout)
    assert as_json["status"] == "PASS"


def test_self_test_detects_a_misbehaving_case(monkeypatch):
    from grader.design import cli as design_cli
    from grader.design.selftest import SelfTestCase

    wrong = (SelfTestCase("expects rule1 but contract is fine", lambda d: None, "rule1"),)
    assert not run_self_test(wrong)[0].ok
    monkeypatch.setattr(design_cli, "run_self_test", lambda: run_self_test(wrong))
    result = invoke("validate", "--self-test")
    assert result.exit_code == 1 and result.stdout.startswith("FAIL")


def test_validate_cli_usage_errors():
    assert invoke("validate").exit_code == 2
    assert invoke("validate", str(CONTRACT), "--self-test").exit_code == 2
