"""PyPTO-Gym compatibility of `kdt-grade design` (issue 13), on contracts in PyPTO-Gym's own format.

The fixtures in fixtures/design/pypto_gym/ are written from PyPTO-Gym's documented format (string
shapes `"[B, N]"`, float16/bfloat16 tensors, `is_fusion: true` on two vector modules, no
`composition_verification`, legacy `phase_<j>` sources). For each, the expected verdict and set of
rules 0-7 are PyPTO-Gym's (each file's header says which rule breaks where); our extra checks are
warnings, and the same file under `--strict` fails on exactly those.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.cli import main
from grader.design.contract import validate_contract, validate_file
from grader.design.generate import generate_from_file
from grader.design.shapes import format_shape, parse_shape
from grader.design.verify import VerifyError, verify_file

GYM = Path(__file__).parent / "fixtures" / "pypto_gym"
GOLDEN = GYM / "rms_norm_golden.py"

# file -> (PyPTO-Gym's verdict, the rules 0-7 it names, our warnings)
EXPECTED = {
    "rms_norm.yaml": ("PASS", set(), {"verification", "fusion", "kdt_dtype"}),
    "attention_legacy.yaml": ("PASS", set(), {"verification", "kdt_dtype"}),
    "broken_sources.yaml": ("FAIL", {"rule1", "rule2", "rule3"}, {"verification", "fusion", "kdt_dtype"}),
    "broken_shapes.yaml": ("FAIL", {"rule5", "rule6", "rule7"}, {"verification", "fusion", "kdt_dtype"}),
    "broken_outputs.yaml": ("FAIL", {"rule3", "rule4"}, {"verification", "kdt_dtype"}),
    "broken_gate.yaml": ("FAIL", {"rule0"}, set()),
}


def invoke(*args: object):
    return CliRunner().invoke(main, ["design", *map(str, args)])


def load(name: str) -> dict:
    return yaml.safe_load((GYM / name).read_text())


def as_lists(doc: dict) -> dict:
    """The same contract with every well-formed string shape written as a YAML list."""
    for entry in doc.get("primary_inputs", []) + [o for m in doc["modules"] for o in m.get("outputs") or []]:
        try:
            entry["shape"] = parse_shape(entry["shape"])
        except ValueError:
            pass  # a broken shape stays broken
    return doc


def test_fixtures_are_in_pypto_gym_format():
    for name in EXPECTED:
        doc = load(name)
        shaped = doc.get("primary_inputs", []) + [o for m in doc["modules"] for o in m.get("outputs") or []]
        assert all(isinstance(e["shape"], str) for e in shaped), name
        assert "composition_verification" not in doc, name
    rms = load("rms_norm.yaml")
    assert rms["is_fusion"] is True and {m["section"] for m in rms["modules"]} == {"vector"}
    assert {p["dtype"] for p in rms["primary_inputs"]} == {"float16"}
    legacy = load("attention_legacy.yaml")
    assert {i["source"] for m in legacy["modules"] for i in m["inputs"]} == {"primary", "phase_1", "phase_2"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdict_and_rules_are_pypto_gyms(name):
    status, rules, warnings = EXPECTED[name]
    report = validate_file(GYM / name)
    assert (report.status, report.rules, report.warning_ids) == (status, rules, warnings)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_strict_fails_on_the_extra_checks(name):
    status, rules, warnings = EXPECTED[name]
    report = validate_file(GYM / name, strict=True)
    assert report.status == ("FAIL" if rules or warnings else "PASS")
    assert {f.rule for f in report.failures} == rules | warnings
    assert report.rules == rules  # --strict adds failures, it never renames PyPTO-Gym's rules


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_list_spelling_gives_the_same_verdict(name):
    status, rules, warnings = EXPECTED[name]
    report = validate_contract(as_lists(load(name)))
    assert (report.status, report.rules, report.warning_ids) == (status, rules, warnings)


def test_cli_text_valid_pypto_gym_contract():
    result = invoke("validate", GYM / "rms_norm.yaml")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "PASS"
    assert lines[1:] == [
        "warning verification: no composition_verification (atol, rtol, seeds, shapes): "
        "`design verify` has nothing to run",
        "warning fusion: is_fusion is true but the sections used are: vector "
        "(true exactly when both cube and vector occur)",
        "warning kdt_dtype: primary_inputs[0] 'x': dtype 'float16': KDT tensors are float32 or bool",
        "warning kdt_dtype: primary_inputs[1] 'w': dtype 'float16': KDT tensors are float32 or bool",
        "warning kdt_dtype: modules[1].outputs[0] 'y': dtype 'float16': KDT tensors are float32 or bool",
        "rules 0-7 (PyPTO-Gym): PASS; extra checks: 5 warning(s) on verification, fusion, kdt_dtype "
        "(fail only with --strict)",
    ]
    strict = invoke("validate", GYM / "rms_norm.yaml", "--strict")
    assert strict.exit_code == 1 and strict.stdout.startswith("FAIL\n")
    assert strict.stdout.splitlines()[-1] == ("rules 0-7 (PyPTO-Gym): PASS; extra checks: FAIL on verification, "
                                              "fusion, kdt_dtype (--strict)")


def test_cli_json_broken_pypto_gym_contract():
    result = invoke("validate", GYM / "broken_sources.yaml", "--json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["status"] == "FAIL" and payload["strict"] is False
    assert payload["violations"] == [
        {"rule": "rule1", "message": "modules[0].inputs[0] 'xs' is not a primary input"},
        {"rule": "rule2", "message": "modules[1].inputs[1] 'rstd': source 'module_2' must refer to a module id < 2"},
        {"rule": "rule3", "message": "final_outputs[0] 'y': source 'module_3' must refer to a module id <= 2"},
    ]
    assert [w["rule"] for w in payload["warnings"]] == ["verification", "fusion"] + ["kdt_dtype"] * 3


def test_cli_text_rule0_stops_validation():
    result = invoke("validate", GYM / "broken_gate.yaml")
    assert result.exit_code == 1
    assert result.stdout == ("FAIL\nrule0: missing required key 'module_count'\n"
                             "rules 0-7 (PyPTO-Gym): FAIL on rule0; extra checks: not run (rule0 stops validation)\n")


def test_cli_exit_codes_follow_pypto_gym_without_strict():
    for name, (status, _, _) in EXPECTED.items():
        assert invoke("validate", GYM / name).exit_code == (0 if status == "PASS" else 1), name
        assert invoke("validate", GYM / name, "--strict").exit_code == 1, name


def test_verify_needs_composition_verification_then_runs_string_shapes_and_float16(tmp_path):
    with pytest.raises(VerifyError, match="verification: no composition_verification"):
        verify_file(GYM / "rms_norm.yaml", GOLDEN)
    doc = load("rms_norm.yaml")
    doc["composition_verification"] = {"atol": 1e-2, "rtol": 1e-2, "seeds": [42, 123],
                                       "shapes": [{"B": 4, "N": 64}, {"B": 3, "N": 10}]}
    path = tmp_path / "module_interfaces.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    report = verify_file(path, GOLDEN)
    assert report.passed and len(report.cases) == 4
    assert all(c.matched_ratio == 1.0 for c in report.cases)
    # float16 and fusion are only warnings for verify: it runs what PyPTO-Gym's contract declares
    assert validate_file(path).warning_ids == {"fusion", "kdt_dtype"}


def test_golden_check_on_the_pypto_gym_contract():
    assert "golden" not in validate_file(GYM / "rms_norm.yaml", golden=GOLDEN).warning_ids
    report = validate_file(GYM / "attention_legacy.yaml", golden=GOLDEN)
    assert report.status == "PASS" and [w.message for w in report.warnings if w.rule == "golden"] == [
        "no top-level function attention_golden_cpu or attention_golden in the golden file"]


def test_kdt_version_of_the_contract_passes_strict():
    """Resolving each warning (KDT dtypes, is_fusion as the sections say, a verification block)."""
    doc = load("rms_norm.yaml")
    for entry in doc["primary_inputs"] + [o for m in doc["modules"] for o in m["outputs"]]:
        entry["dtype"] = "float32"
    assert validate_contract(doc).warning_ids == {"verification", "fusion"}
    doc["is_fusion"] = False
    assert validate_contract(doc).warning_ids == {"verification"}
    doc["composition_verification"] = {"atol": 1e-5, "rtol": 1e-5, "seeds": [42], "shapes": [{"B": 2, "N": 8}]}
    assert validate_contract(doc, strict=True, golden=GOLDEN).status == "PASS"


def test_gen_writes_the_layout_of_the_pypto_gym_fixture():
    """Our skeleton for the fixture's golden has PyPTO-Gym's keys, order and spelling; filling in the
    architect's TODOs gives the fixture itself (plus our composition_verification block)."""
    skeleton = yaml.safe_load(generate_from_file(GOLDEN, "rms_norm").yaml_text)
    theirs = load("rms_norm.yaml")
    assert list(skeleton) == list(theirs) + ["composition_verification"]
    for ours, fixture in zip(skeleton["modules"], theirs["modules"]):
        assert list(ours) == list(fixture)
    assert [p["name"] for p in skeleton["primary_inputs"]] == ["x", "w"]
    assert skeleton["final_outputs"] == theirs["final_outputs"]
    for key in ("is_fusion", "has_cross_core"):
        skeleton[key] = theirs[key]
    skeleton["primary_inputs"] = theirs["primary_inputs"]
    for ours, fixture in zip(skeleton["modules"], theirs["modules"]):
        assert ours["golden_stage_fn"] == fixture["golden_stage_fn"]
        ours.update(fixture)
    del skeleton["composition_verification"]
    assert skeleton == theirs


# --- the two shape spellings agree, and rule5 follows the grammar (property test) ----------------

_ALLOWED_OPS, _REFUSED_OPS = (" + ", " - ", " * ", " // "), (" ** ", " / ", " % ")


def _expressions():
    """(dimension text, whether PyPTO-Gym's grammar refuses it) pairs."""
    atoms = st.one_of(st.sampled_from(["M", "N", "K", "S_kv"]), st.integers(0, 4096).map(str)).map(lambda a: (a, False))

    def extend(inner):
        binary = st.tuples(inner, st.sampled_from(_ALLOWED_OPS + _REFUSED_OPS), inner).map(
            lambda t: (t[0][0] + t[1] + t[2][0], t[0][1] or t[2][1] or t[1] in _REFUSED_OPS))
        return st.one_of(binary, inner.map(lambda e: (f"({e[0]})", e[1])), inner.map(lambda e: (f"-{e[0]}", e[1])),
                         inner.map(lambda e: (f"+{e[0]}", True)))

    return st.recursive(atoms, extend, max_leaves=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_expressions(), min_size=0, max_size=4))
def test_string_and_list_spellings_agree_and_rule5_follows_the_grammar(dims):
    texts = [text for text, _ in dims]
    refused = any(bad for _, bad in dims)
    verdicts = []
    for shape in (format_shape(texts), texts):
        doc = load("rms_norm.yaml")
        doc["primary_inputs"][0]["shape"] = shape
        verdicts.append(validate_contract(doc).rules)
    assert verdicts[0] == verdicts[1] == ({"rule5"} if refused else set()), texts
