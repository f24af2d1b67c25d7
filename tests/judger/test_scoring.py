"""The score formula at and around the threshold, task totals and the MXM utilisation (judging.md)."""
import pytest

from judger import scoring
from judger.totals import summarize, task_totals
from judger.tasks import POINTS_PER_TASK, TASKS, WEIGHTS
from judger.verdicts import PointResult, Verdict


@pytest.mark.parametrize("threshold", [8000, 11000, 54613, 1919810])
def test_at_or_below_the_threshold_scores_100(threshold):
    assert scoring.point_score(threshold, threshold) == 100.0
    assert scoring.point_score(threshold - 1, threshold) == 100.0
    assert scoring.point_score(1, threshold) == 100.0
    assert scoring.point_score(0, threshold) == 100.0  # spec: 100 if cycles <= T


def test_just_above_the_threshold():
    # 10 + 90 * (T / cycles) ** 4, evaluated exactly as written
    assert scoring.point_score(11001, 11000) == 10 + 90 * (11000 / 11001) ** 4
    assert scoring.point_score(11001, 11000) == 99.9672801639371
    assert scoring.point_score(54614, 54613) == 99.99340846463276
    assert 99.99 < scoring.point_score(54614, 54613) < 100.0


def test_exact_values_far_above_the_threshold():
    assert scoring.point_score(22000, 11000) == 15.625           # (1/2)^4 = 1/16
    assert scoring.point_score(44000, 11000) == 10.3515625       # (1/4)^4 = 1/256
    assert scoring.point_score(21248, 11000) == 16.464590494810544
    assert scoring.point_score(10 ** 12, 8000) == 10.0  # (8e-9)^4 vanishes next to 10 in a float
    assert scoring.point_score(10 ** 5, 8000) == 10 + 90 * 0.08 ** 4


def test_score_is_monotonic_and_continuous_only_from_above():
    scores = [scoring.point_score(c, 1000) for c in range(1000, 5000, 7)]
    assert scores == sorted(scores, reverse=True)
    # The formula tends to 100 as cycles -> T from above: no jump at the threshold
    assert scoring.point_score(10 ** 9 + 1, 10 ** 9) == pytest.approx(100.0, abs=1e-6)


@pytest.mark.parametrize("cycles,threshold", [(-1, 10), (1.5, 10), (10, 0), (10, 2.5), (None, 10)])
def test_point_score_rejects_bad_input(cycles, threshold):
    with pytest.raises(ValueError):
        scoring.point_score(cycles, threshold)


def test_task_score_and_total():
    assert scoring.task_score([100.0, 55.0], 10) == 7.75
    assert scoring.task_score([100.0] * 4, 40) == 40.0
    assert scoring.task_score([100.0, 0.0, 50.0, 25.0], 40) == 17.5
    assert scoring.task_score([15.625, 15.625], 30) == 4.6875
    assert scoring.total([7.75, 20.0, 4.6875, 17.5]) == 49.9375
    with pytest.raises(ValueError):
        scoring.task_score([], 10)


@pytest.mark.parametrize("scores,weight", [([100.0, 55.0], 10), ([16.464590494810544, 100.0], 10),
                                           ([36.84302987319042, 35.064761341250616], 20),
                                           ([100.0, 23.1, 23.05, 0.0], 40)])
def test_task_score_is_the_db_layers_formula(scores, weight):
    from db import totals
    assert totals.contest_task_score is scoring.task_score  # one formula: the database layer uses this one
    assert scoring.task_score(scores, weight) == sum(scores) / len(scores) * weight / 100


def test_full_marks_total_100():
    results = [PointResult(t.id, p.index, Verdict.AC, 1, 100.0) for t in TASKS.values() for p in t.points]
    summary = summarize(results)
    assert summary["total"] == 100.0
    assert {t: v["score"] for t, v in summary["tasks"].items()} == {t: float(w) for t, w in WEIGHTS.items()}


def test_task_totals_from_results():
    results = [PointResult(1, 0, Verdict.AC, 332, 100.0), PointResult(1, 1, Verdict.AC, 22000, 15.625),
               PointResult(4, 0, Verdict.AC, 10, 100.0), PointResult(4, 1, Verdict.WA, 10),
               PointResult(4, 2, Verdict.TLE), PointResult(4, 3, Verdict.CE)]
    assert task_totals(results) == {1: 5.78125, 4: 10.0}
    assert summarize(results)["total"] == 15.78125
    with pytest.raises(ValueError, match="needs results for points"):
        task_totals(results[:1])
    with pytest.raises(ValueError, match="two results"):
        task_totals(results + results[:1])


def test_mxm_utilisation_formula():
    # judging.md's example line: 22482 cycles on task 2 point 0 is "91.1% of MXM's peak"
    work = 512 * 1024 * 2560
    assert scoring.mxm_utilisation(work, 22482, 32) == (work / 22482) / (2048 * 32)
    assert f"{100 * scoring.mxm_utilisation(work, 22482, 32):.1f}" == "91.1"
    task2, task4 = TASKS[2], TASKS[4]
    assert task2.mxm_work(task2.points[0]) == work
    assert task4.mxm_work(task4.points[3]) == 2048 * 4096 * 2 * 128
    assert TASKS[1].mxm_work(TASKS[1].points[0]) is None


def test_weights_and_point_counts():
    assert WEIGHTS == {1: 10, 2: 20, 3: 30, 4: 40}
    assert POINTS_PER_TASK == {1: 2, 2: 2, 3: 2, 4: 4}
    assert sum(WEIGHTS.values()) == 100


def test_cycles_for_score_is_the_exact_inverse_on_every_threshold():
    """For each contest threshold and a range of scores: the cycles returned score at least that much, one
    cycle more scores less. 90 points at T = 23272 needs 23,967 cycles or fewer: 23272 * (90 / 80) ** 0.25 = 23967.4 (the page's table)."""
    thresholds = sorted({p.threshold for t in TASKS.values() for p in t.points})
    for threshold in thresholds:
        assert scoring.cycles_for_score(100, threshold) == threshold
        for score in (99.999, 95, 90, 75.5, 50, 25, 10.001):
            cycles = scoring.cycles_for_score(score, threshold)
            assert scoring.point_score(cycles, threshold) >= score > scoring.point_score(cycles + 1, threshold)
    assert scoring.cycles_for_score(90, 23272) == 23967
    assert scoring.cycles_for_score(10, 23272) is None and scoring.cycles_for_score(0, 8000) is None
    with pytest.raises(ValueError):
        scoring.cycles_for_score(100.5, 8000)
    with pytest.raises(ValueError):
        scoring.cycles_for_score(50, 0)
