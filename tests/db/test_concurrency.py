"""Concurrent workers writing the same test point, on SQLite (one file, WAL) and PostgreSQL.

Threads start together at a barrier, each with its own session and connection, so the inserts of a
new point genuinely race: without `ON CONFLICT` the unique key would make one fail (or, without
the key, both would insert); on SQLite without the busy timeout one would get "database is locked".
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select

from db.results import TestPointResult, claim_attempt, get_result, record_result
from db.session import session_scope

THREADS = 4
POINTS = 8


def _run_together(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run `work(i)` for i in range(count) in threads released at once; re-raise the first error."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = work(index)
        except BaseException as error:  # collected and re-raised in the main thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a writer hung"
    if errors:
        raise errors[0]
    return results


def test_concurrent_record_result_creates_one_row_per_point(factory, submission_id):
    for point in range(POINTS):

        def write(index: int, point: int = point) -> None:
            with session_scope(factory) as session:
                record_result(
                    session, submission_id, 4, point, "AC", 1000 + index, 10.0 * (index + 1), f"writer {index}",
                    f"w{index}",
                )

        _run_together(THREADS, write)

    with session_scope(factory) as session:
        count = session.scalar(select(func.count()).select_from(TestPointResult))
        rows = [get_result(session, submission_id, 4, point) for point in range(POINTS)]
    assert count == POINTS
    for row in rows:
        # One writer's values as a whole, never a mixture of two.
        index = int(row["worker"][1:])
        assert (row["cycles"], row["score"], row["message"]) == (1000 + index, 10.0 * (index + 1), f"writer {index}")


def test_concurrent_claims_get_distinct_attempt_numbers(factory, submission_id):
    def claim(index: int) -> int:
        with session_scope(factory) as session:
            return claim_attempt(session, submission_id, 2, 0, f"w{index}")

    counts = _run_together(THREADS * 2, claim)

    assert sorted(counts) == list(range(1, THREADS * 2 + 1))
    with session_scope(factory) as session:
        row = get_result(session, submission_id, 2, 0)
        count = session.scalar(select(func.count()).select_from(TestPointResult))
    assert row["attempts"] == THREADS * 2
    assert count == 1


def test_deliveries_that_saw_the_same_row_claim_the_point_once(factory, submission_id):
    """Deliveries of one point that all read it as free before any of them wrote (PostgreSQL does not
    serialise that read and the write) claim it once: the others get None and must leave it, instead of
    counting attempts 2, 3, ... for one judging. First with no row yet, then with a stale claim."""
    for expected in (1, 2):
        with session_scope(factory) as session:
            seen = get_result(session, submission_id, 2, 0)

        def claim(index: int, seen=seen) -> int | None:
            with session_scope(factory) as session:
                return claim_attempt(session, submission_id, 2, 0, f"w{index}", seen=seen)

        counts = _run_together(THREADS, claim)
        assert sorted(counts, key=lambda c: c is None) == [expected] + [None] * (THREADS - 1)
    with session_scope(factory) as session:
        assert get_result(session, submission_id, 2, 0)["attempts"] == 2
