"""The scoreboard freeze's rules (``grader.service.contest``) on SQLite and PostgreSQL, at explicit times:
freezing by hand keeps the scheduled freeze; unfreezing a manual freeze before the scheduled time leaves
the last hour's freeze to come; after it, unfreezing lifts both."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from grader.refusals import BadRequest
from grader.service import contest

T = datetime(2026, 12, 6, 13, 0, tzinfo=UTC)  # the scheduled freeze: the contest's last hour
MINUTE = timedelta(minutes=1)


@pytest.fixture
def service(make_deployment, database_url):
    deployment = make_deployment(database_url=database_url)
    deployment.service.init_db()
    contest.set_rules(deployment.service, freeze_at=T)
    return deployment.service


def test_a_manual_freeze_and_unfreeze_before_the_schedule_leave_the_scheduled_freeze(service):
    manual = T - timedelta(hours=2)
    rules = contest.freeze_now(service, now=manual)
    assert (rules.freeze_at, rules.frozen_since, rules.unfrozen) == (T, manual, False)
    assert rules.leaderboard_cutoff(manual + MINUTE) == manual

    rules = contest.unfreeze(service, now=manual + 30 * MINUTE)
    assert (rules.freeze_at, rules.frozen_since, rules.unfrozen) == (T, None, False)
    assert rules.frozen(manual + 31 * MINUTE) is False
    assert rules.leaderboard_cutoff(T + MINUTE) == T  # the last hour is frozen as planned
    assert contest.get_rules(service) == rules


def test_a_manual_freeze_in_force_past_the_schedule_counts_from_the_earlier_time(service):
    manual = T - 10 * MINUTE
    contest.freeze_now(service, now=manual)
    assert contest.get_rules(service).leaderboard_cutoff(T + MINUTE) == manual
    rules = contest.unfreeze(service, now=T + 2 * timedelta(hours=1))  # after the contest: the reveal
    assert (rules.freeze_at, rules.frozen_since, rules.unfrozen) == (T, None, True)
    assert rules.frozen(T + 3 * timedelta(hours=1)) is False


def test_freezing_now_while_frozen_changes_nothing(service):
    assert contest.freeze_now(service, now=T + MINUTE).frozen_since is None  # the schedule is in force
    contest.unfreeze(service, now=T + 5 * MINUTE)
    later = T + 20 * MINUTE
    rules = contest.freeze_now(service, now=later)  # frozen again by hand after the reveal
    assert (rules.frozen_since, rules.leaderboard_cutoff(later + MINUTE)) == (later, later)
    assert contest.freeze_now(service, now=later + MINUTE).frozen_since == later


def test_a_new_schedule_arms_the_freeze_again_and_frozen_since_is_not_a_setting(service):
    contest.unfreeze(service, now=T + MINUTE)
    rules = contest.set_rules(service, freeze_at=T + timedelta(hours=1))
    assert rules.unfrozen is False and rules.frozen(T + 2 * timedelta(hours=1)) is True
    with pytest.raises(BadRequest, match="unknown contest settings"):
        contest.set_rules(service, frozen_since=T)
