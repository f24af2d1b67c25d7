"""The contest as data and the one function that grades a test point (spec judging.md).

- ``judger.tasks``: the four tasks, ten test points, input generators, references, ``WEIGHTS`` and
  ``POINTS_PER_TASK``;
- ``judger.scoring``: ``point_score``, ``task_score``, ``total``, ``mxm_utilisation`` (the only place
  scores are computed);
- ``judger.totals``: ``task_totals``, ``summarize`` (a submission's results summed with those formulas);
- ``judger.verdicts``: ``Verdict`` and the plain-data ``PointResult``;
- ``judger.testdata``: each test point's trial inputs and references, computed once per process and
  cached on disk;
- ``judger.grading``: ``compile_point`` (untrusted step), ``judge_compiled`` (trusted step),
  ``grade_point`` (both), ``load_submission``/``kernel_for_task``;
- ``judger/judger.py``: the handout-compatible local judger (``python judger/judger.py --help``).
"""
import importlib

# Where each public name lives. They are imported on first use (PEP 562), so that the plain-data modules
# (``judger.verdicts``, ``judger.scoring``) can be imported without torch (the database layer does).
_NAMES = {
    "grading": ("CompileFailed", "compile_failed_result", "compile_point", "grade_point", "judge_compiled",
                "kernel_for_task", "launch_trial", "limit_threads", "load_submission", "point_trials",
                "seed_rngs", "trial_inputs"),
    "scoring": ("mxm_utilisation", "point_score", "task_score", "total"),
    "totals": ("summarize", "task_totals"),
    "tasks": ("POINTS_PER_TASK", "TASK_IDS", "TASKS", "WEIGHTS", "Task", "TestPoint", "get_point", "get_task"),
    "verdicts": ("VERDICTS", "PointResult", "Verdict"),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'judger' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
