"""Two submissions compared: ``/submissions/A/compare/B``, each change from A to B.

Thin: the session, ``grader.service.compare`` (its visibility: a contestant's own submissions only, anyone
else's id answers 404 exactly as a missing one; organisers any), the view model ``comparison_page_view``
and ``compare.html``. ``/submissions/ID/compare?with=X`` is where the submission page's picker goes (it
works without JavaScript): a redirect (303) to ``/submissions/X/compare/ID``, the chosen one as A, so the
page says what changed from it to this one.

Improvements are green and regressions red, and each says so in words and with its sign (``▲ better``,
``▼ worse``, ``+5.51``, ``-13,056``): colour is never the only mark.
"""
from __future__ import annotations

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import RedirectResponse, Response

from grader.display import count_text
from grader.refusals import NotFound
from grader.service import compare
from grader.web.http import cookie_session as session

from .base import MAX_ID, SubmissionId, error_page, page, to_login
from .render import cycles_text, score_text, time_text

router = APIRouter(include_in_schema=False)

MARKS = {"better": "\u25b2 better", "worse": "\u25bc worse", "same": "= same", "pending": "\u2026 pending"}


def _good_class(good: bool | None) -> str:
    return "" if good is None else ("up" if good else "down")


def _score_change(delta: float | None) -> dict:
    """A score's change as display data: ``{"text": "+5.51", "cls": "up"}`` (``down`` for a loss, no class
    for none)."""
    if delta is None:
        return {"text": "", "cls": ""}
    if abs(delta) < compare.EPSILON:
        return {"text": "0.00", "cls": ""}
    return {"text": f"{delta:+.2f}", "cls": _good_class(delta > 0)}


def _cycles_change(delta: int | None) -> dict:
    """A change of cycles: ``-13,056`` (fewer: ``up``, an improvement), ``+204`` (``down``), ``0``."""
    if delta is None:
        return {"text": "", "cls": ""}
    sign = "+" if delta > 0 else "-" if delta < 0 else ""
    return {"text": sign + count_text(abs(delta)), "cls": _good_class(None if not delta else delta < 0)}


def _side(side: dict) -> dict:
    return {**side, "created_text": time_text(side["created"]), "total_text": score_text(side["total"]),
            "url": f"/submissions/{side['id']}"}


def comparison_page_view(doc: dict) -> dict:
    """``compare.compare``'s document as display data: cycles with thousands separators, scores with two
    decimals, changes signed with their class (``up`` an improvement, ``down`` a regression), each point's
    ``mark`` in words (``MARKS``)."""
    points = []
    for p in doc["points"]:
        points.append({
            **p, "row_cls": f"ch-{p['change']}", "mark": MARKS[p["change"]],
            "verdict_a": p["verdict_a"] or "pending", "verdict_b": p["verdict_b"] or "pending",
            "cycles_a_text": cycles_text(p["cycles_a"]), "cycles_b_text": cycles_text(p["cycles_b"]),
            "cycles_change": _cycles_change(p["cycles_delta"]),
            "ratio_text": "" if p["cycles_ratio"] is None else f"{p['cycles_ratio']:.2f}\u00d7",
            "score_a_text": score_text(p["score_a"]) if p["verdict_a"] else "",
            "score_b_text": score_text(p["score_b"]) if p["verdict_b"] else "",
            "score_change": _score_change(p["score_delta"])})
    tasks = [{**t, "score_a_text": score_text(t["score_a"]), "score_b_text": score_text(t["score_b"]),
              "change": _score_change(t["delta"])} for t in doc["tasks"]]
    return {"a": _side(doc["a"]), "b": _side(doc["b"]), "same_file": doc["same_file"], "points": points,
            "tasks": tasks, "total_change": _score_change(doc["total_delta"]), "counts": doc["counts"],
            "summary": ", ".join(f"{doc['counts'][c]} {c}" for c in compare.CHANGES if doc["counts"][c])}


def picker_view(others: dict, submission_id: int) -> dict | None:
    """The submission page's "compare with" form: its options (newest first, the default selected) and
    the link to the default comparison; None when the author has no other submission."""
    if not others["rows"]:
        return None
    options = [{"id": r["submission_id"], "selected": r["submission_id"] == others["default"],
                "label": f"#{r['submission_id']} {r['file_name']} ({time_text(r['created'])}, total "
                         f"{score_text(r['total'])})"} for r in others["rows"]]
    default = others["default"]
    return {"action": f"/submissions/{submission_id}/compare", "options": options, "default": default,
            "default_url": f"/submissions/{default}/compare/{submission_id}",
            "default_is_previous": default < submission_id}


@router.get("/submissions/{submission_id}/compare")
def pick(request: Request, submission_id: int = SubmissionId, other: int | None = Query(None, alias="with", ge=1,
                                                                                       le=MAX_ID)) -> Response:
    """The picker's target: 303 to ``/submissions/WITH/compare/ID`` (without ``with``: the default, the
    submission made just before this one)."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    if other is None:
        try:
            other = compare.others(request.app.state.service, account, submission_id)["default"]
        except NotFound:
            other = None
        if other is None:
            return error_page(request, 404, "Not found", f"There is no other submission to compare submission "
                              f"{submission_id} with.", account)
    return RedirectResponse(f"/submissions/{other}/compare/{submission_id}", status_code=303)


@router.get("/submissions/{a}/compare/{b}")
def compared(request: Request, a: int = Path(ge=1, le=MAX_ID), b: int = Path(ge=1, le=MAX_ID)) -> Response:
    """Submissions A and B side by side: per test point the verdicts, cycles (with B / A) and scores and
    the change from A to B, per task and in total; a picker to compare B with another of its author's."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    service = request.app.state.service
    try:
        doc = compare.comparison_for(service, account, a, b)
        picker = picker_view(compare.others(service, account, b), b)
    except NotFound as exc:
        return error_page(request, 404, "Not found", f"There is {exc.message}.", account)  # as the submission page
    return page(request, "compare.html", account=account, cmp=comparison_page_view(doc), picker=picker)
