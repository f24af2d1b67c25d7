"""The contest as data and the one function that grades a test point (spec judging.md).

- ``judger.tasks``: the four tasks, ten test points, input generators, references, ``WEIGHTS`` and
  ``POINTS_PER_TASK``;
- ``judger.scoring``: ``point_score``, ``task_score``, ``total``, ``mxm_utilisation`` (the only place
  scores are computed);
- ``judger.verdicts``: ``Verdict`` and the plain-data ``PointResult``;
- ``judger.testdata``: each test point's trial inputs and references, computed once per process and
  cached on disk;
- ``judger.grading``: ``compile_point`` (untrusted step), ``judge_compiled`` (trusted step),
  ``grade_point`` (both), ``load_submission``/``kernel_for_task``, ``task_totals``/``summarize``;
- ``judger/judger.py``: the handout-compatible local judger (``python judger/judger.py --help``).
"""
from .grading import (CompileFailed, compile_failed_result, compile_point, grade_point, judge_compiled,
                      kernel_for_task, launch_trial, limit_threads, load_submission, point_trials, seed_rngs,
                      summarize, task_totals, trial_inputs)
from .scoring import mxm_utilisation, point_score, task_score, total
from .tasks import POINTS_PER_TASK, TASK_IDS, TASKS, WEIGHTS, Task, TestPoint, get_point, get_task
from .verdicts import VERDICTS, PointResult, Verdict

__all__ = ["CompileFailed", "POINTS_PER_TASK", "PointResult", "TASKS", "TASK_IDS", "Task", "TestPoint", "VERDICTS",
           "Verdict", "WEIGHTS", "compile_failed_result", "compile_point", "get_point", "get_task", "grade_point",
           "judge_compiled", "kernel_for_task", "launch_trial", "limit_threads", "load_submission", "mxm_utilisation",
           "point_score", "point_trials", "seed_rngs", "summarize", "task_score", "task_totals", "total", "trial_inputs"]
