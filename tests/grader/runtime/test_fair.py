"""``grader.runtime.fair``: ``fair_order`` (test points) and ``FairQueue`` (compiles): fewest in flight first, then
least recently served, then oldest."""
import threading
from datetime import datetime, timedelta, timezone

from grader.runtime.fair import FairQueue, fair_order

T0 = datetime(2026, 12, 6, 9, tzinfo=timezone.utc)


def point(sid, task, p, user, worker=None):
    return {"submission_id": sid, "task": task, "point": p, "user_id": user, "worker": worker}


def test_the_user_with_fewer_points_in_flight_goes_first_whatever_arrived_first():
    ready = [point(1, 1, 1, "hog"), point(1, 2, 0, "hog"), point(2, 1, 0, "quick")]
    running = [point(1, 1, 0, "hog", "w1")]
    order = fair_order(ready, running, {"hog": T0}, lambda worker: False)
    assert order[0] == (2, 1, 0) and order[1:] == [(1, 1, 1), (1, 2, 0)]


def test_equal_shares_go_to_the_user_served_least_recently():
    ready = [point(1, 1, 0, "a"), point(2, 1, 0, "b"), point(3, 1, 0, "c")]
    served = {"a": T0 + timedelta(seconds=5), "b": T0 + timedelta(seconds=9)}  # c never served
    assert fair_order(ready, [], served, lambda worker: False) == [(3, 1, 0), (1, 1, 0), (2, 1, 0)]


def test_a_claim_of_a_gone_worker_is_a_candidate_and_not_in_flight():
    running = [point(1, 1, 0, "a", "dead"), point(2, 1, 0, "b", "alive")]
    ready = [point(2, 1, 1, "b"), point(3, 1, 0, "a")]
    order = fair_order(ready, running, {}, lambda worker: worker == "dead")
    assert order == [(1, 1, 0), (3, 1, 0), (2, 1, 1)]


# ---- FairQueue: the embedded server's compile queue --------------------------------------------------

def test_one_users_backlog_does_not_delay_another_users_compile():
    """Arrival order a1 a2 a3 b1 (a FIFO: b1 last); handed out a1 b1 a2 a3 by one compile thread."""
    queue = FairQueue()
    for item, user in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")):
        queue.put(item, user)
    order = []
    while (taken := queue.get(timeout=0)) is not None:
        order.append(taken)
        queue.done(taken[1])
    assert order == [("a1", "a"), ("b1", "b"), ("a2", "a"), ("a3", "a")]


def test_the_user_with_fewer_compiles_running_goes_first_then_the_least_recently_served():
    queue = FairQueue()
    queue.put("a1", "a")
    queue.put("a2", "a")
    assert queue.get(timeout=0) == ("a1", "a")           # a1 is running (no done yet)
    queue.put("b1", "b")
    queue.put("b2", "b")
    assert queue.get(timeout=0) == ("b1", "b")           # a and b have one running each now
    queue.put("c1", "c")
    assert queue.get(timeout=0) == ("c1", "c")           # c had none running
    queue.done("a")
    queue.done("b")
    queue.done("c")                                      # all idle: a was served longest ago
    assert [queue.get(timeout=0) for _ in range(2)] == [("a2", "a"), ("b2", "b")]
    assert queue.get(timeout=0) is None                  # nothing waits: the timeout ends the wait


def test_an_item_waiting_is_queued_once_and_close_ends_every_wait():
    queue = FairQueue()
    queue.put(7, 1)
    queue.put(7, 1)
    assert queue.get(timeout=0) == (7, 1) and queue.get(timeout=0) is None
    queue.put(7, 1)  # no longer waiting: queued again (a compile tried again later)
    got = []
    waiter = threading.Thread(target=lambda: got.append([queue.get(), queue.get()]))
    waiter.start()
    waiter.join(0.2)
    queue.close()
    waiter.join(5)
    assert not waiter.is_alive() and got == [[(7, 1), None]]
    queue.put(8, 1)  # ignored after close
    assert queue.get(timeout=0) is None
