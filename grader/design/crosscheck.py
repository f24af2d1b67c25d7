"""The contract against its golden file and against a judged task (our extra checks).

Two warnings that `design validate` adds when it is given the files (`--golden`, `--task`), and
that `design check` always applies to the task it checks (`task`):

  golden  the golden file (read with `ast`, never imported) defines `<op>_golden_cpu` (or
          `<op>_golden`), its positional parameters are the primary inputs' names in order, and
          every module's `golden_stage_fn` is a top-level function of it;
  task    the contract fits judged task N (`judger.tasks`): the primary inputs are the task's
          inputs in generation order (without the output), the only final output is the task's
          output, and at every test point each of those tensors' shapes, evaluated with the
          point's `task_args` (e.g. M, N, K), and dtype are the task's. The task's tensors are
          made on torch's `meta` device: no data, no RNG draw.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader.design.document import entries, module_ids, modules, name_of
from grader.design.generate import GenerateError, golden_function, parse_golden, positional_parameters, read_golden_source
from grader.design.naming import parse_module_ref
from grader.design.shapes import ShapeExprError, eval_shape

__all__ = ["crosscheck", "golden_findings", "task_findings"]


def golden_findings(data: dict, golden: str | Path) -> Iterator[str]:
    """Messages of the `golden` check for a parsed contract (rule0 passed) and a golden file."""
    op = data.get("op")
    try:
        functions = parse_golden(read_golden_source(golden))
        if not isinstance(op, str):
            raise GenerateError(f"op {op!r} names no golden function")
        fn = golden_function(functions, op)
    except GenerateError as exc:
        yield str(exc)
        return
    primaries = [p.get("name") for _, p in entries(data.get("primary_inputs"))]
    params = positional_parameters(fn)
    if params != primaries:
        yield f"{fn.name} takes ({', '.join(params)}) but primary_inputs are ({', '.join(map(str, primaries))})"
    for m, module in modules(data):
        stage = module.get("golden_stage_fn")
        if isinstance(stage, str) and stage not in functions:
            yield f"modules[{m}].golden_stage_fn {stage!r} is not a top-level function of {golden}"


def _final_entries(data: dict) -> dict[str, dict]:
    """Final output name -> its declaring module output entry (where the source resolves)."""
    by_id: dict[int, dict] = {}
    for _, module, mid in module_ids(data):
        by_id.setdefault(mid, module)
    found = {}
    for _, final in entries(data.get("final_outputs")):
        module = by_id.get(parse_module_ref(final.get("source")))
        for _, out in entries(module.get("outputs") if module else None):
            if out.get("name") == final.get("name"):
                found[name_of(final)] = out
    return found


def task_findings(data: dict, task_id: Any) -> Iterator[str]:
    """Messages of the `task` check for a parsed contract (rule0 passed) and a judged task id."""
    import torch  # only this check needs the judger (and torch)

    from judger.tasks import TASKS

    task = TASKS.get(task_id) if isinstance(task_id, int) else None
    if task is None:
        yield f"no judged task {task_id!r}; tasks are {', '.join(map(str, sorted(TASKS)))}"
        return
    wanted = [n for n in task.inputs if n != task.output]
    primaries = {name_of(p): p for _, p in entries(data.get("primary_inputs"))}
    if list(primaries) != wanted:
        yield f"primary_inputs are ({', '.join(map(str, primaries))}); task {task.id} has ({', '.join(wanted)})"
    finals = _final_entries(data)
    names = [f.get("name") for _, f in entries(data.get("final_outputs"))]
    if names != [task.output]:
        yield f"final_outputs are ({', '.join(map(str, names))}); task {task.id} outputs ({task.output})"
    declared = {n: e for n, e in (primaries | finals).items() if n in task.inputs}
    for point in task.points:
        with torch.device("meta"):
            io = task.make_inputs(point)
        for name, entry in declared.items():
            tensor = io[name]
            try:
                shape = eval_shape(entry.get("shape"), point.task_args)
            except ShapeExprError as exc:
                yield f"{name} at test point {point.index} ({_args(point)}): {exc}"
                continue
            if shape != tuple(tensor.shape):
                yield (f"{name} at test point {point.index} ({_args(point)}): shape {list(shape)}, "
                       f"the task's is {list(tensor.shape)}")
            dtype = str(tensor.dtype).removeprefix("torch.")
            if entry.get("dtype") != dtype:
                yield f"{name}: dtype {entry.get('dtype')!r}, the task's is {dtype!r}"


def _args(point) -> str:
    return " ".join(f"{k}={v}" for k, v in point.task_args.items())


def crosscheck(data: dict, *, golden: str | Path | None = None, task: Any = None) -> Iterator[tuple[str, str]]:
    """(check id, message) of the `golden` and `task` checks that were asked for."""
    if golden is not None:
        yield from (("golden", m) for m in golden_findings(data, golden))
    if task is not None:
        yield from (("task", m) for m in _dedupe(task_findings(data, task)))


def _dedupe(messages: Iterator[str]) -> Iterator[str]:
    seen: set[str] = set()
    for message in messages:
        if message not in seen:
            seen.add(message)
            yield message
