"""Clarifications, announcements and read marks (`db.messages`) on SQLite and PostgreSQL: who sees which
question, the organisers' queue order, answers private and published, unread counts and the change stamp."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.exc import IntegrityError

from db import messages
from db.base import utcnow
from db.session import session_scope
from db.users import get_or_create_user


def test_questions_answers_and_what_each_user_sees(factory):
    t0 = utcnow().replace(microsecond=0)
    with session_scope(factory) as s:
        alice, bob, org = (get_or_create_user(s, n)["id"] for n in ("alice", "bob", "org"))
        q1 = messages.ask(s, alice, 3, "Is the task 3 threshold right?", t0)
        q2 = messages.ask(s, bob, None, "My submission is stuck", t0 + timedelta(seconds=1))
        q3 = messages.ask(s, alice, None, "Second question", t0 + timedelta(seconds=2))
        stamp0 = messages.messages_stamp(s)
    assert q1["state"] == "open" and q1["task"] == 3 and q1["created"] == t0 and q1["published"] is False
    with session_scope(factory) as s:
        assert [q["id"] for q in messages.open_clarifications(s)] == [q1["id"], q2["id"], q3["id"]]
        assert [q["id"] for q in messages.clarifications_for(s, bob)] == [q2["id"]]
        assert messages.unread(s, alice) == {"answers": 0, "announcements": 0}

    with session_scope(factory) as s:
        done = messages.answer(s, q1["id"], org, "Yes, it is the handout's.", True, t0 + timedelta(minutes=1),
                               public_text="Is a threshold of 1,919,810 cycles right?")
        messages.answer(s, q2["id"], org, "Rejudged.", False, t0 + timedelta(minutes=2))
        messages.ignore(s, q3["id"], org, t0 + timedelta(minutes=3))
        assert messages.answer(s, 999_999, org, "x", False, t0) is None
        assert messages.ignore(s, 999_999, org, t0) is None
        stamp1 = messages.messages_stamp(s)
    assert done["state"] == "answered" and done["handled_by"] == org and done["published"] is True
    assert stamp1 != stamp0
    with session_scope(factory) as s:
        assert messages.open_clarifications(s) == []
        seen_by_bob = messages.clarifications_for(s, bob)
        assert [(q["id"], q["mine"]) for q in seen_by_bob] == [(q2["id"], True), (q1["id"], False)]
        public = seen_by_bob[1]  # alice's question as everyone sees it: reworded, no author
        assert public["text"] == "Is a threshold of 1,919,810 cycles right?" and public["author_id"] is None
        assert public["answer"] == "Yes, it is the handout's." and public["handled_by"] is None
        seen_by_alice = messages.clarifications_for(s, alice)
        assert [q["id"] for q in seen_by_alice] == [q3["id"], q1["id"]]  # bob's private answer is his
        assert seen_by_alice[1]["text"] == "Is the task 3 threshold right?"  # her own words to herself
        assert seen_by_alice[0]["state"] == "ignored" and seen_by_alice[0]["answer"] is None
        assert messages.unread(s, alice) == {"answers": 1, "announcements": 0}  # an ignore is not an answer
        assert messages.unread(s, bob) == {"answers": 2, "announcements": 0}  # his own and alice's public one
        assert [q["id"] for q in messages.all_clarifications(s, limit=2)] == [q3["id"], q2["id"]]
        assert messages.questions_since(s, alice, t0 + timedelta(seconds=1)) == [t0 + timedelta(seconds=2)]


def test_announcements_pinned_first_and_read_marks(factory):
    t0 = utcnow().replace(microsecond=0)
    with session_scope(factory) as s:
        carol, org = (get_or_create_user(s, n)["id"] for n in ("carol", "org"))
        a1 = messages.announce(s, org, "Contest extended by 30 minutes", t0, pinned=True)
        a2 = messages.announce(s, org, "Task 2 rejudged", t0 + timedelta(minutes=5))
        assert messages.unread(s, carol) == {"answers": 0, "announcements": 2}
        assert messages.read_at(s, carol) is None
        messages.mark_read(s, carol, t0 + timedelta(minutes=6))
        assert messages.read_at(s, carol) == t0 + timedelta(minutes=6)
        assert messages.unread(s, carol) == {"answers": 0, "announcements": 0}
        a3 = messages.announce(s, org, "Freeze in 1 hour", t0 + timedelta(minutes=7))
        messages.mark_read(s, carol, t0 + timedelta(minutes=6))  # a second mark updates the row
        assert messages.unread(s, carol) == {"answers": 0, "announcements": 1}
        assert [a["id"] for a in messages.announcements(s)] == [a1["id"], a3["id"], a2["id"]]
        assert a1 == {"id": a1["id"], "author_id": org, "text": "Contest extended by 30 minutes",
                      "created": t0, "pinned": True}


def test_the_database_refuses_a_task_below_one(factory):
    with pytest.raises(IntegrityError):
        with session_scope(factory) as s:
            user = get_or_create_user(s, "dave")["id"]
            messages.ask(s, user, 0, "?", utcnow())
