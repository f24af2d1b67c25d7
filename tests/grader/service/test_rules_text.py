"""The rules as a contestant reads them (``grader.service.rules_text``): the judger's exact tasks, weights
and thresholds, a worked example equal to ``point_score``, the cycles for each score level, the contest's
times and limits in words ("no limit" when unset), the cycles a graded point needs for 100 and for 10
points more (a real ``kdt-grade local`` run of the baseline's task 1), and ``kdt-grade rules`` locally."""
from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from grader.service import contest
from grader.service.rules_text import contestant_rules, cycles_needed
from judger.scoring import cycles_for_score, point_score
from judger.tasks import COS_DIFF_TOL, TASKS, TIMEOUT_S, TRIALS
from judger.verdicts import VERDICTS
from service_testlib import EXAMPLES, clean_env, run_cli

BASELINE = EXAMPLES / "baseline.py"
# The spec's table (judging.md, "Test points"), written out: the document must give exactly these.
THRESHOLDS = [(1, 0, 1919810), (1, 1, 11000), (2, 0, 23272), (2, 1, 54613), (3, 0, 23272), (3, 1, 54613),
              (4, 0, 8000), (4, 1, 36408), (4, 2, 71234), (4, 3, 142469)]


def test_the_rules_give_the_judgers_tasks_weights_and_thresholds(make_deployment):
    doc = contestant_rules(make_deployment().service)
    assert [(t["id"], t["name"], t["weight"]) for t in doc["tasks"]] == [
        (1, "vector add", 10), (2, "matmul", 20), (3, "matmul w/ fine grain scale", 30), (4, "flash attention", 40)]
    assert [(t["id"], p["index"], p["threshold"]) for t in doc["tasks"] for p in t["points"]] == THRESHOLDS
    assert [(t.id, p.index, p.threshold) for t in TASKS.values() for p in t.points] == THRESHOLDS
    assert [p["args"] for p in doc["tasks"][3]["points"]] == [
        {"S_qo": 1024, "S_kv": 128, "D": 128}, {"S_qo": 1024, "S_kv": 2048, "D": 128},
        {"S_qo": 1024, "S_kv": 4096, "D": 128}, {"S_qo": 2048, "S_kv": 4096, "D": 128}]
    assert doc["tasks"][1]["points"][0]["args_text"] == "M = 512, N = 1024, K = 2560"
    assert [(t["num_sms"], t["load_store_latency"], t["spm_size"]) for t in doc["tasks"]] == [
        (1, 50, 128 * 1024), (32, 1000, 384 * 1024), (32, 1000, 528 * 1024), (8, 1000, 640 * 1024)]
    assert doc["formula"] == "score = 100 if cycles <= T, else 10 + 90 * (T / cycles) ** 4"
    assert doc["scoring"]["task"] == "A task's score is the mean of its test points' scores times its weight / 100."
    assert "Equal totals rank by the earlier submission first" in doc["scoring"]["ties"]
    assert "best whole submission" in doc["scoring"]["leaderboard"]

    # each score level's cycles: the most that still score it (one more cycle scores less)
    assert doc["score_levels"] == [90, 75, 50, 25]
    for task in doc["tasks"]:
        for p in task["points"]:
            for level, cycles in p["cycles_for"].items():
                assert point_score(cycles, p["threshold"]) >= int(level) > point_score(cycles + 1, p["threshold"])
    assert doc["tasks"][0]["points"][1]["cycles_for"] == {"90": 11328, "75": 11932, "50": 13472, "25": 17215}


def test_the_rules_spell_out_verdicts_tolerances_trials_and_time_limit(make_deployment):
    doc = contestant_rules(make_deployment().service)
    assert [v["text"] for v in doc["verdicts"]] == [
        "AC (accepted): the output was correct in every trial; the point is scored by its cycles.",
        "WA (wrong answer): a trial's output differed from the reference beyond the tolerances (the message "
        "gives the worst errors).",
        "CE (compile error): the file, its get_kernel or the kernel's compilation failed.",
        "RE (runtime error): the launch failed (out-of-bounds view, SPM overflow, shape or type error).",
        "TLE (time limit exceeded): a launch ran past its time limit (on the judge: CPU time, whatever the "
        "machine's load).",
        "MLE (memory limit exceeded): the grading process ran past its memory limit.",
        "SV (security violation): the audit or the sandbox stopped the submission.",
        "IE (internal error): the judge's own fault, never the submission's: the point is graded again, "
        "never scored."]
    assert [v["verdict"] for v in doc["verdicts"]] == list(VERDICTS)
    # the judge's own tolerances (judger.tasks, judger.grading), so the page and the judge cannot disagree
    assert [t["tolerances"] for t in doc["tasks"]] == [
        {"abs": t.tolerances[0], "rel": t.tolerances[1], "cos_diff": COS_DIFF_TOL} for t in TASKS.values()]
    assert [tuple(t["tolerances"].values()) for t in doc["tasks"]] == [
        (1e-5, 1e-5, 1e-7), (1e-5, 2e-3, 1e-7), (1e-5, 2e-3, 1e-7), (1e-5, 2e-3, 1e-7)]
    assert doc["scoring"]["correct"] == (
        "A trial's output is correct when it has the reference's shape and dtype, inf and nan in the same "
        "places, every element (all of them: a 100% pass rate) has an absolute error |out - ref| below abs_tol "
        "or a relative error |out - ref| / (|ref| + 1e-06) below rel_tol, and the cosine difference "
        "1 - 2 * sum(out * ref) / sum(out^2 + ref^2) is at most 1e-07. Tolerances: task 1: abs_tol 1e-05, "
        "rel_tol 1e-05; tasks 2, 3 and 4: abs_tol 1e-05, rel_tol 0.002.")
    assert doc["scoring"]["trials"] == (
        "Each test point runs 3 trials, each on different random inputs (the same inputs for every "
        "submission); it is AC only if every trial's output is correct. Its cycles are the same in every "
        "trial: timing never depends on the data.")
    assert TRIALS == 3 and TIMEOUT_S == 20.0
    assert doc["scoring"]["time_limit"] == (
        "Time limit: 20 s of CPU time per kernel launch (one trial) on the judge's machine, however busy it "
        "is; a launch that uses more is TLE. (The contest's local judger, judger/judger.py, counts wall-clock "
        "time.)")
    assert doc["scoring"]["point"] == (
        "A correct test point (verdict AC) with threshold T scores 100 if its cycles are at most T, else "
        "10 + 90 * (T / cycles)^4: between 10 and 100, and twice T's cycles score 10 + 90/16 = 15.625. "
        "Any other verdict (WA, CE, RE, TLE, MLE, SV) scores 0.")
    assert "last of" not in json.dumps(doc)


def test_the_worked_example_is_the_formula_redone_by_hand(make_deployment):
    example = contestant_rules(make_deployment().service)["example"]
    assert (example["task"], example["point"], example["threshold"], example["cycles"]) == (1, 1, 11000, 13750)
    assert example["score"] == point_score(13750, 11000) == pytest.approx(10 + 90 / 1.25 ** 4)
    assert round(example["score"], 2) == 46.86
    assert example["text"] == (
        "Task 1 point 1 has T = 11,000. A correct kernel taking 13,750 cycles (1.25 T) scores "
        "10 + 90 * (11000 / 13750)^4 = 10 + 90 / 1.25^4 = 46.86; task 1 (weight 10) with its other point at 100 "
        "scores (46.86 + 100) / 2 * 10 / 100 = 7.34. For 56.86 (+10) it needs at most 12,949 cycles.")
    assert point_score(12949, 11000) >= example["score"] + 10 > point_score(12950, 11000)


def test_the_contest_times_and_limits_in_words(make_deployment):
    service = make_deployment().service
    unset = contestant_rules(service)
    assert {line["key"]: line["text"] for line in unset["lines"]} == {
        "starts_at": "none: open now", "ends_at": "none: no end",
        "freeze_at": "none: the leaderboard is never frozen", "min_interval_seconds": "no limit",
        "max_per_hour": "no limit", "max_pending": "no limit", "max_questions_per_hour": "no limit",
        "max_bytes": "1,048,576 bytes at most"}
    assert unset["contest"]["limits"] == {"min_interval_seconds": None, "max_per_hour": None, "max_pending": None,
                                          "max_questions_per_hour": None, "max_bytes": 1048576}
    # frozen by hand with no freeze scheduled: said so (attacker review: it said "never frozen (frozen now)")
    contest.freeze_now(service, now=datetime(2026, 12, 6, 2, tzinfo=UTC))
    frozen = contestant_rules(service, now=datetime(2026, 12, 6, 3, tzinfo=UTC))
    assert frozen["lines"][2]["text"] == "none scheduled; frozen by the organisers since 2026-12-06 02:00:00 UTC"
    contest.unfreeze(service)

    contest.set_rules(service, name="KDT 2026", starts_at=datetime(2026, 12, 6, 1, tzinfo=UTC),
                      ends_at=datetime(2026, 12, 6, 9, tzinfo=UTC), freeze_at=datetime(2026, 12, 6, 8, tzinfo=UTC),
                      min_interval_seconds=30, max_per_hour=12, max_pending=2, max_questions_per_hour=5)
    doc = contestant_rules(service, now=datetime(2026, 12, 6, 8, 30, tzinfo=UTC))
    assert [(line["label"], line["text"]) for line in doc["lines"]] == [
        ("Start", "2026-12-06 01:00:00 UTC"), ("End", "2026-12-06 09:00:00 UTC"),
        ("Leaderboard freeze", "2026-12-06 08:00:00 UTC (frozen now)"),
        ("Time between two of your submissions", "30 s at least"), ("Your submissions in any hour", "12 at most"),
        ("Your submissions waiting to be graded", "2 at most"), ("Your questions in any hour", "5 at most"),
        ("Size of a submitted file", "1,048,576 bytes at most")]
    assert doc["contest"] == {"name": "KDT 2026", "starts_at": "2026-12-06T01:00:00+00:00",
                              "ends_at": "2026-12-06T09:00:00+00:00", "freeze_at": "2026-12-06T08:00:00+00:00",
                              "frozen": True, "limits": {"min_interval_seconds": 30.0, "max_per_hour": 12,
                                                         "max_pending": 2, "max_questions_per_hour": 5,
                                                         "max_bytes": 1048576}}
    before = contestant_rules(service, now=datetime(2026, 12, 6, 7, tzinfo=UTC))
    assert before["contest"]["frozen"] is False and before["lines"][2]["text"] == "2026-12-06 08:00:00 UTC"


def test_cycles_needed_says_the_threshold_and_the_cycles_for_ten_points_more():
    assert cycles_needed(1, 1, "AC", 36.8) == {"cycles_for_100": 11000,
                                               "cycles_for_plus_10": cycles_for_score(46.8, 11000)}
    assert cycles_needed(4, 3, "AC", 95.0) == {"cycles_for_100": 142469, "cycles_for_plus_10": 142469}  # 100 at most
    assert cycles_needed(1, 0, "AC", 100.0) == {"cycles_for_100": 1919810, "cycles_for_plus_10": None}
    for verdict in ("WA", "CE", "TLE", None):  # not correct (or not graded yet): the threshold only
        assert cycles_needed(2, 0, verdict, 0.0) == {"cycles_for_100": 23272, "cycles_for_plus_10": None}
    with pytest.raises(KeyError):
        cycles_needed(1, 2, "AC", 50.0)


def test_a_graded_baseline_point_says_how_many_cycles_it_needs(tmp_path):
    env = {**clean_env(), "KDT_GRADE_DATA_DIR": str(tmp_path), "COLUMNS": "160"}
    report = json.loads(run_cli(["local", BASELINE, "--task", "1", "--json"], env).stdout)
    first, second = report["points"]
    assert (first["verdict"], first["cycles"], first["score"]) == ("AC", 332, 100.0)
    assert (first["cycles_for_100"], first["cycles_for_plus_10"]) == (1919810, None)
    assert (second["verdict"], second["cycles"]) == ("AC", 21248)
    score = second["score"]
    assert score == point_score(21248, 11000) and round(score, 2) == 16.46
    assert (second["cycles_for_100"], second["cycles_for_plus_10"]) == (11000, 16819)
    assert point_score(16819, 11000) >= score + 10 > point_score(16820, 11000)

    table = run_cli(["local", BASELINE, "--task", "1"], env).stdout
    head = next(line for line in table.splitlines() if "verdict" in line)
    assert [cell.strip() for cell in head.strip("┃ ").split("┃")][:8] == [
        "task", "point", "verdict", "cycles", "MXM", "score", "cycles for 100", "cycles for +10"]
    rows = [[cell.strip() for cell in line.strip("│ ").split("│")] for line in table.splitlines()
            if line.startswith("│    1 │")]
    assert [row[:8] for row in rows if row[1]] == [["1", "0", "AC", "332", "-", "100.00", "1,919,810", "-"],
                                         ["1", "1", "AC", "21,248", "-", "16.46", "11,000", "16,819"]]


def test_the_rules_command_locally(make_deployment):
    deployment = make_deployment()
    contest.set_rules(deployment.service, max_per_hour=12)
    as_json = json.loads(deployment.cli("rules", "--json").stdout)
    expected = contestant_rules(deployment.service)
    assert as_json == expected and as_json["contest"]["limits"]["max_per_hour"] == 12
    text = deployment.cli("rules").stdout
    assert "A test point: score = 100 if cycles <= T, else 10 + 90 * (T / cycles) ** 4" in text
    assert "= 10 + 90 / 1.25^4 = 46.86;" in text
    flat = " ".join(text.split())  # the terminal wraps long lines
    for line in [*(v["text"] for v in expected["verdicts"]),
                 *(expected["scoring"][key] for key in ("trials", "correct", "time_limit"))]:
        assert " ".join(line.split()) in flat, line
    assert "Verdicts:\nAC (accepted): the output was correct in every trial;" in text
    rows = {line.split("│")[5].strip(): line for line in text.splitlines() if line.count("│") == 11}
    assert [cell.strip() for cell in rows["N=16384"].strip("│ ").split("│")] == [
        "1", "vector add", "10", "0", "N=16384", "1,919,810", "1,977,180", "2,082,526", "2,351,277", "3,004,665"]
    assert "S_qo=2048 S_kv=4096 D=128" in rows and "142,469" in rows["S_qo=2048 S_kv=4096 D=128"]
    assert "│ Your submissions in any hour" in text and "12 at most" in text and "no limit" in text
