"""The result key of a test point (``grader.judging.reuse``, issue 33): the same kernel gives the same key
whatever JSON it came in, the order its dicts were filled in or the objects' addresses; any change of
the IR, the point or the judge version gives another key."""
import json
import random

import kdt
from grader.judging import reuse
from grader.config import load_settings
from grader.judging.reuse import canonical_ir, compile_version, judge_version, result_key
from judger.grading import compile_point, kernel_for_task, load_submission
from judger.tasks import get_point, get_task

from tests.grader.service.service_testlib import FIXTURES

QUICK = FIXTURES / "quick_vadd.py"


def _compiled(path, task=1, point=0) -> kdt.CompiledKernel:
    module = load_submission(path)
    return compile_point(kernel_for_task(module, task), get_task(task), get_point(task, point))


def _shuffled(value, rng):
    """``value`` with every dict's keys in a random insertion order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: _shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def test_the_same_kernel_has_one_key_whatever_its_json_and_objects():
    first, again = _compiled(QUICK), _compiled(QUICK)  # two compiles: other objects, other addresses
    assert first is not again and first.ir is not again.ir
    key = result_key(1, 0, first)
    assert len(key) == 64 and key == result_key(1, 0, again)
    rng = random.Random(7)
    for _ in range(5):  # the IR as JSON in another key order and layout, loaded by the strict loader
        text = json.dumps(_shuffled(first.to_dict(), rng), indent=rng.choice([None, 1, 4]))
        assert result_key(1, 0, kdt.CompiledKernel.from_json(text)) == key
    assert canonical_ir(first) == json.dumps(first.to_dict(), sort_keys=True, separators=(",", ":"))


def test_other_ir_another_point_or_another_judge_give_other_keys(tmp_path, monkeypatch):
    base = _compiled(QUICK)
    key = result_key(1, 0, base)
    assert result_key(1, 1, base) != key and result_key(2, 0, base) != key
    renamed = tmp_path / "renamed.py"  # the same kernel under another name: the IR names it, so do messages
    renamed.write_text(QUICK.read_text().replace("vadd", "vector_add"))
    assert result_key(1, 0, _compiled(renamed)) != key
    moved = tmp_path / "moved.py"  # one blank line more: every line number of the IR moves
    moved.write_text(QUICK.read_text().replace("import kdt\n", "import kdt\n\n"))
    assert result_key(1, 0, _compiled(moved)) != key
    commented = tmp_path / "commented.py"  # a comment at the end of a line changes nothing the judge sees
    commented.write_text(QUICK.read_text().replace("kdt.add(x, y, x)", "kdt.add(x, y, x)  # c = a + b"))
    assert result_key(1, 0, _compiled(commented)) == key
    for change in ({"num_jobs": 2}, {"name": "vadd2"}):  # one field of the IR, as the strict loader takes it
        assert result_key(1, 0, kdt.CompiledKernel.from_json(json.dumps({**base.to_dict(), **change}))) != key
    assert result_key(1, 0, kdt.CompiledKernel.from_json(json.dumps(base.to_dict()))) == key
    assert result_key(1, 0, base, (20.0, 4096)) != result_key(1, 0, base, (10.0, 4096)) != \
        result_key(1, 0, base, (10.0, 2048))  # a stricter time or memory limit: another key
    settings = load_settings()
    assert compile_version(settings) == compile_version(load_settings()) != compile_version(
        load_settings(compile_cpu_seconds=3)) != compile_version(load_settings(sim_timeout_seconds=19))
    version = judge_version()
    monkeypatch.setattr(reuse, "judge_version", lambda: "0" * 64)  # another kdt, judger, torch or numpy
    assert result_key(1, 0, base) != key and version != "0" * 64
