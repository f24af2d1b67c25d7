"""Issue 9: the memory-space cheats (a24-a27 in cases/) get no AC through the service's path, with a
message that names the instruction, the operand and the fix; and a tampered sandbox child that sends a
hand-made IR with a global operand is refused by the trusted loader (SV), not simulated."""
import json
from pathlib import Path

import pytest

from grader.judging.compile import compile_submission
from grader.judging.pipeline import grade_source, judge

from test_corpus import POINTS, SETTINGS

CASES = Path(__file__).parent / "cases"
ROOT = Path(__file__).resolve().parents[2]
CHEATS = {
    "a24_vadd_without_load_or_store": (1, 14, "operand 'a' of kdt.add is io_tensors['a'], in global memory, "
                                              "but kdt.add needs an SPM tile (kdt.alloc_spm) there: load it "
                                              "into an SPM tile first (kdt.load)"),
    "a25_copy_from_global_instead_of_load": (1, 16, "operand 'src' of kdt.copy is io_tensors['a'], in global "
                                                    "memory, but kdt.copy needs an SPM tile (kdt.alloc_spm) "
                                                    "there: load it into an SPM tile first (kdt.load)"),
    "a26_where_into_global_instead_of_store": (1, 21, "operand 'out' of kdt.where is io_tensors['c'], in global "
                                                      "memory, but kdt.where needs an SPM tile (kdt.alloc_spm) "
                                                      "there: write into an SPM tile first, then kdt.store that "
                                                      "tile into the global tensor"),
    "a27_matmul_on_global_tensors": (4, 19, "operand 'a' of kdt.matmul is io_tensors['Q'], in global memory, "
                                            "but kdt.matmul needs an SPM tile (kdt.alloc_spm) there: load it "
                                            "into an SPM tile first (kdt.load)"),
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_a_memory_space_cheat_is_a_located_compile_error(name):
    task, line, problem = CHEATS[name]
    results = grade_source((CASES / f"{name}.py").read_bytes(), SETTINGS, points=POINTS)
    assert [r.verdict.value for r in results] == ["CE", "CE"] and all(r.score == 0 for r in results)
    attempted = next(r for r in results if r.task == task)
    assert f"Line {line}, Col " in attempted.message and "MemorySpaceError" in attempted.message
    assert problem in attempted.message, attempted.message


def _task1_ir() -> dict:
    outcome = compile_submission((ROOT / "submissions/examples/baseline.py").read_bytes(), [(1, 0)],
                                 SETTINGS.sandbox_limits)
    return json.loads(outcome.kernels[(1, 0)].to_json())


def _insts(doc, op):
    return [s for s in doc["body"] if s["t"] == "inst" and s["op"] == op]


def test_the_honest_ir_is_accepted():
    r = judge(1, 0, {"ir": json.dumps(_task1_ir())}, SETTINGS)
    assert (r.verdict.value, r.cycles, r.score) == ("AC", 332, 100.0)


@pytest.mark.parametrize("cheat", ["add_reads_global", "add_writes_global", "load_into_global",
                                   "store_from_global", "copy_from_global"])
def test_a_hand_made_ir_with_a_global_operand_is_refused_by_the_trusted_loader(cheat):
    """What a tampered child could send instead of the front end's IR: every variant is SV (security
    violation: the front end can never produce it) and names the rule."""
    doc = _task1_ir()
    load_a, load_b = _insts(doc, "load")
    add, = _insts(doc, "add")
    store, = _insts(doc, "store")
    if cheat == "add_reads_global":      # the no-load vadd: add straight from io_tensors['a'] and ['b']
        add["args"]["a"], add["args"]["b"] = load_a["args"]["src"], load_b["args"]["src"]
        want = "$.body[4].args.a: operand 'a' of kdt.add is io_tensors['a']"
    elif cheat == "add_writes_global":
        add["args"]["out"] = store["args"]["dst"]
        want = "operand 'out' of kdt.add is io_tensors['c']"
    elif cheat == "load_into_global":
        load_a["args"]["dst"] = store["args"]["dst"]
        want = "operand 'dst' of kdt.load is io_tensors['c']"
    elif cheat == "store_from_global":
        store["args"]["src"] = load_a["args"]["src"]
        want = "operand 'src' of kdt.store is io_tensors['a']"
    else:
        load_a["op"] = "copy"
        want = "operand 'src' of kdt.copy is io_tensors['a']"
    r = judge(1, 0, {"ir": json.dumps(doc)}, SETTINGS)
    assert (r.verdict.value, r.cycles, r.score) == ("SV", None, 0.0)
    assert r.message.startswith("security violation: malformed compiled kernel: ") and want in r.message, r.message
