"""PointResult crosses process boundaries as plain JSON and rejects malformed records."""
import json

import pytest

from judger.verdicts import VERDICTS, PointResult, Verdict


def test_verdicts():
    assert VERDICTS == ("AC", "WA", "CE", "RE", "TLE", "MLE", "SV", "IE")
    assert Verdict("TLE") is Verdict.TLE and Verdict.TLE == "TLE"
    assert all(v.description for v in Verdict)
    assert (Verdict.WA.description, Verdict.TLE.explanation) == (
        "wrong answer", "a launch ran past its time limit (on the judge: CPU time, whatever the machine's load)")


def test_round_trip_through_json():
    r = PointResult(2, 1, Verdict.AC, 75178, 35.064761341250616, "",
                    {"compile_s": 0.1, "simulate_s": 2.0, "total_s": 2.5}, 0.6538082949799143)
    data = json.loads(json.dumps(r.to_dict()))
    assert data == {"task": 2, "point": 1, "verdict": "AC", "cycles": 75178, "score": 35.064761341250616,
                    "message": "", "timings": {"compile_s": 0.1, "simulate_s": 2.0, "total_s": 2.5},
                    "utilisation": 0.6538082949799143, "reused": False}
    back = PointResult.from_dict(data)
    assert back == r and back.verdict is Verdict.AC
    reused = PointResult(**{**vars(r), "reused": True})
    assert PointResult.from_dict(json.loads(json.dumps(reused.to_dict()))).reused is True
    del data["reused"]  # a result written before reuse existed reads as not reused
    assert PointResult.from_dict(data) == r


def test_defaults_and_string_verdict():
    r = PointResult(4, 3, "CE", message="Line 3, Col 5, ...")
    assert r.verdict is Verdict.CE and r.score == 0.0 and r.cycles is None
    assert r.timings == {"compile_s": 0.0, "simulate_s": 0.0, "total_s": 0.0}
    assert PointResult.from_dict(r.to_dict()) == r


@pytest.mark.parametrize("change", [
    {"verdict": "OK"}, {"score": 101.0}, {"score": -1}, {"score": float("nan")}, {"verdict": "WA", "score": 5.0},
    {"cycles": -1}, {"cycles": 1.5}, {"task": 0}, {"point": -1}, {"task": "1"}, {"message": None},
    {"timings": {"compile_s": 1}}, {"timings": {"compile_s": -1.0, "simulate_s": 0.0, "total_s": 0.0}},
    {"utilisation": "high"}, {"extra": 1}, {"reused": 1},
])
def test_from_dict_rejects_malformed(change):
    good = PointResult(1, 0, Verdict.AC, 10, 100.0).to_dict()
    with pytest.raises(ValueError):
        PointResult.from_dict({**good, **change})


def test_from_dict_rejects_missing_keys_and_non_dicts():
    good = PointResult(1, 0, Verdict.AC, 10, 100.0).to_dict()
    del good["message"]
    with pytest.raises(ValueError, match="missing"):
        PointResult.from_dict(good)
    with pytest.raises(ValueError):
        PointResult.from_dict([1, 2])


def test_a_message_with_a_lone_surrogate_is_stored_as_its_escape():
    r = PointResult(1, 0, Verdict.CE, message="get_kernel(1) raised ValueError: \ud800!")
    assert r.message == "get_kernel(1) raised ValueError: \\ud800!" and r.message.encode("utf-8")
    assert PointResult(1, 0, Verdict.CE, message="ok é ✓").message == "ok é ✓"
