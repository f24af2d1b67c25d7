"""``grader.service.messages`` in process, on SQLite and PostgreSQL: text limits, the task subject, the hourly
question limit (a contest rule, organisers exempt), asking before and after the window, who reads which
question, answers private and to all (reworded), ignore, announcements under a frozen scoreboard, unread."""
from __future__ import annotations

from datetime import timedelta

import pytest

from db.base import utcnow
from grader.config import load_settings
from grader.refusals import BadRequest, Forbidden, NotFound, TooMany
from grader.service import Service, accounts, contest, messages


@pytest.fixture
def service(tmp_path, database_url):
    settings = load_settings(data_dir=tmp_path / "var", database_url=database_url, broker_url=None)
    with Service(settings) as service:
        service.init_db()
        yield service


def _account(service, name, admin=False) -> accounts.Account:
    return accounts.Account.from_row(accounts.add_user(service, name, is_admin=admin)[0])


def test_text_limits_are_checked_and_nothing_is_stored_for_a_refusal(service):
    alice = _account(service, "alice")
    cases = [("", "the question is empty"), ("  \n\t ", "the question is empty"),
             ("a\x00b", "the question contains a control character (only newlines and tabs are allowed)"),
             ("lone \ud800 surrogate", "the question is not valid Unicode text"),
             ("x" * 2001, "the question has 2001 characters; at most 2000 are allowed"),
             ("\n".join("l" * 31), "the question has 31 lines; at most 30 are allowed")]
    for text, message in cases:
        with pytest.raises(BadRequest) as refused:
            messages.ask(service, alice, text)
        assert (refused.value.status, refused.value.code, refused.value.message) == (400, "bad_text", message)
    with pytest.raises(BadRequest) as refused:
        messages.ask(service, alice, "which task?", task=7)
    assert refused.value.code == "bad_task" and refused.value.message.startswith("there is no task 7; the tasks are 1, 2, 3, 4")
    assert messages.clarifications_for(service, alice) == []
    at_limit = messages.ask(service, alice, "\r\n ok\r\nsecond line \n" + "y" * 1984, task=2)
    assert at_limit["text"] == "ok\nsecond line \n" + "y" * 1984 and at_limit["task"] == 2
    assert len(at_limit["text"]) == 2000


def test_hourly_question_limit_is_a_contest_rule_and_organisers_are_exempt(service):
    alice, bob, org = _account(service, "alice"), _account(service, "bob"), _account(service, "org", admin=True)
    assert contest.set_rules(service, max_questions_per_hour=2).max_questions_per_hour == 2
    with pytest.raises(BadRequest, match="--max-questions-per-hour must be between 1 and 1000000"):
        contest.set_rules(service, max_questions_per_hour=0)
    t0 = utcnow()
    messages.ask(service, alice, "one", now=t0 - timedelta(minutes=50))
    messages.ask(service, alice, "two", now=t0 - timedelta(minutes=10))
    with pytest.raises(TooMany) as refused:
        messages.ask(service, alice, "three", now=t0)
    assert (refused.value.status, refused.value.code, refused.value.retry_after) == (429, "question_limit", 600)
    assert refused.value.message == "at most 2 questions per hour: try again in 600 s"
    assert messages.ask(service, alice, "three", now=t0 + timedelta(minutes=10, seconds=1))["text"] == "three"
    assert messages.ask(service, bob, "per user", now=t0)["text"] == "per user"
    for n in range(3):
        messages.ask(service, org, f"organiser {n}", now=t0)
    assert [q["text"] for q in messages.clarifications_for(service, alice)] == ["three", "two", "one"]
    contest.set_rules(service, max_questions_per_hour=None)
    messages.ask(service, alice, "four", now=t0 + timedelta(minutes=10, seconds=2))


def test_asking_is_allowed_outside_the_window_and_the_freeze_hides_no_announcement(service):
    alice, org = _account(service, "alice"), _account(service, "org", admin=True)
    now = utcnow()
    contest.set_rules(service, starts_at=now + timedelta(hours=1), ends_at=now + timedelta(hours=2))
    assert messages.ask(service, alice, "before the start?")["state"] == "open"
    contest.set_rules(service, starts_at=now - timedelta(hours=2), ends_at=now - timedelta(hours=1),
                      freeze_at=now - timedelta(hours=1, minutes=30))
    assert contest.get_rules(service).frozen(utcnow())
    assert messages.ask(service, alice, "after the end?")["state"] == "open"
    made = messages.announce(service, org, "Results at 18:00", pinned=True)
    assert messages.announcements(service) == [made]
    assert made["pinned"] is True and made["text"] == "Results at 18:00"
    assert messages.unread(service, alice) == {"answers": 0, "announcements": 1, "total": 1}


def test_answers_private_and_to_all_ignore_and_who_reads_what(service):
    alice, bob, org = _account(service, "alice"), _account(service, "bob"), _account(service, "org", admin=True)
    t0 = utcnow().replace(microsecond=0)
    q1 = messages.ask(service, alice, "Is the <b>task 3</b> threshold right?", task=3, now=t0)
    q2 = messages.ask(service, bob, "My submission is stuck", now=t0 + timedelta(seconds=1))
    q3 = messages.ask(service, alice, "Can I use numpy?", now=t0 + timedelta(seconds=2))
    assert q1 == {"id": q1["id"], "task": 3, "text": "Is the <b>task 3</b> threshold right?",
                  "created": t0.isoformat(), "state": "open", "answer": None, "published": False,
                  "answered_at": None, "mine": True}
    queue = messages.open_questions(service)
    assert [(q["id"], q["author"]) for q in queue] == [(q1["id"], "alice"), (q2["id"], "bob"), (q3["id"], "alice")]

    with pytest.raises(NotFound, match=f"no question {q1['id']} you can read"):
        messages.clarification_for(service, bob, q1["id"])  # private until published
    t1 = t0 + timedelta(minutes=1)
    done = messages.answer(service, org, q1["id"], "Yes: 1,919,810 cycles.", publish=True,
                           public_text="Is the task 3 threshold right?", now=t1)
    assert (done["state"], done["published"], done["handled_by_name"], done["author"]) == ("answered", True, "org", "alice")
    messages.answer(service, org, q2["id"], "Rejudged.", now=t1 + timedelta(seconds=1))
    messages.ignore(service, org, q3["id"], now=t1 + timedelta(seconds=2))
    with pytest.raises(NotFound, match="no question 999999"):
        messages.answer(service, org, 999_999, "x")
    with pytest.raises(NotFound):
        messages.ignore(service, org, 999_999)
    with pytest.raises(BadRequest, match="the answer is empty"):
        messages.answer(service, org, q2["id"], " ")
    assert messages.open_questions(service) == []

    seen_by_bob = messages.clarification_for(service, bob, q1["id"])
    assert seen_by_bob == {"id": q1["id"], "task": 3, "text": "Is the task 3 threshold right?",
                           "created": t0.isoformat(), "state": "answered", "answer": "Yes: 1,919,810 cycles.",
                           "published": True, "answered_at": t1.isoformat(), "mine": False}
    assert [(q["id"], q["mine"]) for q in messages.clarifications_for(service, bob)] == [(q2["id"], True), (q1["id"], False)]
    with pytest.raises(NotFound):
        messages.clarification_for(service, alice, q2["id"])  # bob's private answer
    alices = messages.clarifications_for(service, alice)
    assert [(q["id"], q["state"], q["answer"]) for q in alices] == [
        (q3["id"], "ignored", None), (q1["id"], "answered", "Yes: 1,919,810 cycles.")]
    assert alices[1]["text"] == "Is the <b>task 3</b> threshold right?"  # her own words to herself
    assert messages.clarification_for(service, org, q2["id"])["author"] == "bob"  # organisers read all
    assert [q["id"] for q in messages.all_questions(service, limit=2)] == [q3["id"], q2["id"]]

    assert messages.unread(service, bob) == {"answers": 2, "announcements": 0, "total": 2}
    before = messages.stamp(service)
    messages.mark_read(service, bob, t1 + timedelta(minutes=1))
    assert messages.read_mark(service, bob) == (t1 + timedelta(minutes=1)).isoformat()
    assert messages.unread(service, bob) == {"answers": 0, "announcements": 0, "total": 0}
    messages.announce(service, org, "Freeze in 1 hour", now=t1 + timedelta(minutes=2))
    assert messages.stamp(service) != before
    assert messages.unread(service, bob) == {"answers": 0, "announcements": 1, "total": 1}
    assert messages.read_mark(service, alice) is None


def test_without_a_server_the_acting_accounts_are_chosen_by_name(service):
    """``accounts.acting_organiser`` and ``accounts.local_account``: who the local commands act as."""
    with pytest.raises(accounts.NoActingOrganiser) as none:
        accounts.acting_organiser(service)
    assert (none.value.organisers, none.value.name) == ([], None)
    root = _account(service, "root", admin=True)
    assert accounts.acting_organiser(service) == root == accounts.acting_organiser(service, "root")
    judge = _account(service, "judge", admin=True)
    _account(service, "alice")
    with pytest.raises(accounts.NoActingOrganiser) as several:
        accounts.acting_organiser(service)
    assert (several.value.organisers, several.value.name) == (["judge", "root"], None)
    for name in ("alice", "nobody"):
        with pytest.raises(accounts.NoActingOrganiser) as unknown:
            accounts.acting_organiser(service, name)
        assert (unknown.value.organisers, unknown.value.name) == (["judge", "root"], name)
    accounts.set_disabled(service, "root", True)
    assert accounts.acting_organiser(service) == judge  # a disabled organiser is none

    with pytest.raises(LookupError):
        accounts.local_account(service, "bob")
    bob = accounts.local_account(service, "bob", create=True)  # as a local submit creates its user
    assert (bob.name, bob.is_admin) == ("bob", False) and accounts.local_account(service, "bob") == bob
    with pytest.raises(BadRequest):
        accounts.local_account(service, "no spaces", create=True)
    accounts.set_disabled(service, "bob", True)
    with pytest.raises(Forbidden) as disabled:
        accounts.local_account(service, "bob")
    assert disabled.value.message == "the account 'bob' is disabled; `admin users enable bob` enables it"


def test_an_organisers_badge_does_not_count_their_own_announcements_and_answers(service):
    """What an organiser wrote is not unread for them; another organiser's announcement and answer are."""
    root, other, alice = _account(service, "root", admin=True), _account(service, "other", admin=True), _account(
        service, "alice")
    question = messages.ask(service, alice, "Is task 2's threshold right?", 2)
    messages.announce(service, root, "Welcome")
    messages.answer(service, root, question["id"], "Yes.", publish=True)
    assert messages.unread(service, root) == {"answers": 0, "announcements": 0, "total": 0}
    assert messages.unread(service, other) == {"answers": 1, "announcements": 1, "total": 2}
    assert messages.unread(service, alice) == {"answers": 1, "announcements": 1, "total": 2}
    messages.announce(service, other, "The end is near")
    assert messages.unread(service, root) == {"answers": 0, "announcements": 1, "total": 1}
