"""Contest communication: clarification requests with their answers, announcements, and what each user
has read (migration 0007).

A ``Clarification`` is a contestant's question (``author_id``, ``task``: a task number or NULL for
"general", ``text``, ``created``) and, once an organiser has handled it, its ``state`` (``open``,
``answered``, ``ignored``), the ``answer``, who answered and when, and whether it is ``published`` to
everyone; a published question may show an organiser's rewording (``public_text``) instead of the
author's words. An ``Announcement`` is an organiser's text to everyone, optionally ``pinned``.
``MessageMark`` keeps, per user, when they last looked at their messages: what arrived later is unread.

What the limits and rules *mean* (text sizes, how often a user may ask) is the service layer's; this
module stores, lists and counts. Every function takes an open session (the caller commits) and returns
plain data (dicts with aware UTC datetimes), never ORM objects.

Public API: ``Clarification``, ``Announcement``, ``MessageMark``, ``STATES``, ``ask``, ``clarification``,
``clarifications_for``, ``open_clarifications``, ``all_clarifications``, ``answer``, ``ignore``,
``questions_since``, ``announce``, ``announcements``, ``mark_read``, ``read_at``, ``unread``, ``messages_stamp``.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, CheckConstraint, ForeignKey, Integer, String, Text, false, func, or_, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base, UTCDateTime
from db.dialects import upsert_insert

STATES = ("open", "answered", "ignored")


class Clarification(Base):
    """One question and its handling; see the module docstring. ``task`` NULL means a general question."""

    __tablename__ = "clarifications"
    __table_args__ = (
        CheckConstraint("state IN ('open', 'answered', 'ignored')", name="state_known"),
        CheckConstraint("task >= 1", name="task_positive"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    task: Mapped[int | None] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    created: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    state: Mapped[str] = mapped_column(String(16), default="open", server_default="open", index=True)
    answer: Mapped[str | None] = mapped_column(Text)
    public_text: Mapped[str | None] = mapped_column(Text)
    published: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    handled_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    handled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Announcement(Base):
    """An organiser's message to everyone (``author_id`` NULL once that account is deleted)."""

    __tablename__ = "announcements"

    id: Mapped[int] = mapped_column(primary_key=True)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    text: Mapped[str] = mapped_column(Text)
    created: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    pinned: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class MessageMark(Base):
    """When user ``user_id`` last read their messages (answers and announcements after it are unread)."""

    __tablename__ = "message_marks"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    read_at: Mapped[datetime] = mapped_column(UTCDateTime())


_CLAR = Clarification.__table__
_ANN = Announcement.__table__
_MARK = MessageMark.__table__


def _clar_dict(row) -> dict[str, Any]:
    return {"id": row.id, "author_id": row.author_id, "task": row.task, "text": row.text,
            "created": row.created, "state": row.state, "answer": row.answer, "public_text": row.public_text,
            "published": row.published, "handled_by": row.handled_by, "handled_at": row.handled_at}


def _ann_dict(row) -> dict[str, Any]:
    return {"id": row.id, "author_id": row.author_id, "text": row.text, "created": row.created,
            "pinned": row.pinned}


def ask(session: Session, author_id: int, task: int | None, text: str, now: datetime) -> dict[str, Any]:
    """Store a new open question of user ``author_id`` about ``task`` (None: general); return it.
    Raises ``IntegrityError`` for an unknown user or a task number below 1."""
    new_id = session.execute(_CLAR.insert().values(author_id=author_id, task=task, text=text, created=now,
                                                   state="open", published=False)
                             .returning(_CLAR.c.id)).scalar_one()
    return clarification(session, new_id)


def clarification(session: Session, clarification_id: int) -> dict[str, Any] | None:
    """The question with id ``clarification_id`` as a dict (see ``Clarification``), or None."""
    row = session.execute(select(_CLAR).where(_CLAR.c.id == clarification_id)).one_or_none()
    return None if row is None else _clar_dict(row)


def clarifications_for(session: Session, user_id: int) -> list[dict[str, Any]]:
    """What user ``user_id`` may read: their own questions (any state) and every published one, newest
    first. A published question of another user is returned with ``author_id`` None and its public
    wording in ``text`` (``public_text`` when an organiser reworded it); ``mine`` tells the two apart."""
    rows = session.execute(select(_CLAR).where(or_(_CLAR.c.author_id == user_id, _CLAR.c.published))
                           .order_by(_CLAR.c.created.desc(), _CLAR.c.id.desc())).all()
    out = []
    for row in rows:
        item = _clar_dict(row) | {"mine": row.author_id == user_id}
        if not item["mine"]:
            item |= {"author_id": None, "text": row.public_text or row.text, "public_text": None,
                     "handled_by": None}
        out.append(item)
    return out


def open_clarifications(session: Session) -> list[dict[str, Any]]:
    """The questions nobody has handled yet, oldest first (the organisers' queue)."""
    rows = session.execute(select(_CLAR).where(_CLAR.c.state == "open")
                           .order_by(_CLAR.c.created, _CLAR.c.id)).all()
    return [_clar_dict(r) for r in rows]


def all_clarifications(session: Session, limit: int = 200) -> list[dict[str, Any]]:
    """Every question (any state), newest first, at most ``limit`` of them (for the organisers)."""
    rows = session.execute(select(_CLAR).order_by(_CLAR.c.created.desc(), _CLAR.c.id.desc())
                           .limit(limit)).all()
    return [_clar_dict(r) for r in rows]


def answer(session: Session, clarification_id: int, organiser_id: int, text: str, publish: bool,
           now: datetime, public_text: str | None = None) -> dict[str, Any] | None:
    """Answer question ``clarification_id`` (again, if it was handled before: the newest answer counts);
    ``publish`` shows it to everyone, with ``public_text`` in place of the author's words when given.
    Returns the question after the change, None when there is no such question."""
    done = session.execute(_CLAR.update().where(_CLAR.c.id == clarification_id).values(
        state="answered", answer=text, published=publish, public_text=public_text if publish else None,
        handled_by=organiser_id, handled_at=now)).rowcount
    return clarification(session, clarification_id) if done else None


def ignore(session: Session, clarification_id: int, organiser_id: int, now: datetime) -> dict[str, Any] | None:
    """Close question ``clarification_id`` without an answer (its author still sees it, marked ignored).
    Returns the question after the change, None when there is no such question."""
    done = session.execute(_CLAR.update().where(_CLAR.c.id == clarification_id).values(
        state="ignored", answer=None, published=False, public_text=None, handled_by=organiser_id,
        handled_at=now)).rowcount
    return clarification(session, clarification_id) if done else None


def questions_since(session: Session, user_id: int, since: datetime) -> list[datetime]:
    """The times of user ``user_id``'s questions asked at or after ``since``, oldest first (rate limits)."""
    return list(session.scalars(select(_CLAR.c.created).where(_CLAR.c.author_id == user_id,
                                                              _CLAR.c.created >= since)
                                .order_by(_CLAR.c.created)))


def announce(session: Session, author_id: int, text: str, now: datetime, pinned: bool = False) -> dict[str, Any]:
    """Store an announcement by organiser ``author_id``; return it."""
    new_id = session.execute(_ANN.insert().values(author_id=author_id, text=text, created=now, pinned=pinned)
                             .returning(_ANN.c.id)).scalar_one()
    row = session.execute(select(_ANN).where(_ANN.c.id == new_id)).one()
    return _ann_dict(row)


def announcements(session: Session) -> list[dict[str, Any]]:
    """Every announcement, pinned ones first, then newest first."""
    rows = session.execute(select(_ANN).order_by(_ANN.c.pinned.desc(), _ANN.c.created.desc(),
                                                 _ANN.c.id.desc())).all()
    return [_ann_dict(r) for r in rows]


def mark_read(session: Session, user_id: int, now: datetime) -> None:
    """Record that user ``user_id`` has read every message up to ``now``."""
    insert = upsert_insert(session, _MARK).values(user_id=user_id, read_at=now)
    session.execute(insert.on_conflict_do_update(index_elements=["user_id"], set_={"read_at": now}))


def read_at(session: Session, user_id: int) -> datetime | None:
    """When user ``user_id`` last read their messages (``mark_read``), or None if never."""
    return session.scalar(select(_MARK.c.read_at).where(_MARK.c.user_id == user_id))


def unread(session: Session, user_id: int) -> dict[str, int]:
    """How many messages user ``user_id`` has not read: ``{"answers", "announcements"}``. ``answers``
    counts answers to their own questions and published answers to others' given since their last read
    (an ignored question is not an answer); ``announcements`` those made since then (all of them for a user who never read).
    What the user wrote themselves is never unread: an organiser's own answers and announcements are not counted."""
    last_read = read_at(session, user_id)
    handled = select(func.count()).select_from(_CLAR).where(
        _CLAR.c.state == "answered", or_(_CLAR.c.author_id == user_id, _CLAR.c.published),
        or_(_CLAR.c.handled_by.is_(None), _CLAR.c.handled_by != user_id))
    made = select(func.count()).select_from(_ANN).where(or_(_ANN.c.author_id.is_(None), _ANN.c.author_id != user_id))
    if last_read is not None:
        handled = handled.where(_CLAR.c.handled_at > last_read)
        made = made.where(_ANN.c.created > last_read)
    return {"answers": int(session.scalar(handled) or 0), "announcements": int(session.scalar(made) or 0)}


def messages_stamp(session: Session) -> str:
    """A value that changes whenever a question is asked or handled or an announcement made (for
    conditional GETs): counts and newest times of both tables."""
    clar = session.execute(select(func.count(), func.max(_CLAR.c.created), func.max(_CLAR.c.handled_at))
                           .select_from(_CLAR)).one()
    ann = session.execute(select(func.count(), func.max(_ANN.c.created)).select_from(_ANN)).one()
    return "|".join(str(v) for v in (*clar, *ann))
