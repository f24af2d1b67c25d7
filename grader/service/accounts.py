"""Contestant and organiser accounts of the contest server: bearer tokens, creation, import, disabling.

Tokens: ``kdt_`` followed by ``secrets.token_urlsafe(32)`` (32 random bytes, 256 bits, URL-safe). The
database keeps only the token's SHA-256 (``db.accounts``): a stolen database yields no usable token.
A fast unsalted hash is enough here, unlike for passwords: a 256-bit random token cannot be guessed or
looked up in a dictionary, so the slow, salted hashes that protect low-entropy passwords add nothing.
A token is found by its hash (a unique index) and the stored hash is compared again with
``hmac.compare_digest``, so no comparison leaks timing about a token's bytes. Tokens are shown once, when
created (``admin users add``, ``import``, ``reset-token``), and never logged.

Public API: ``Account``, ``new_token``, ``hash_token``, ``check_name``, ``add_user``, ``parse_user_csv``,
``import_users``, ``import_user_csv``, ``list_users``, ``set_disabled``, ``reset_token``, ``authenticate``
(``well_formed`` and ``account_for``: its two halves); for the commands run on the database itself, with no
server and so no token to say who acts: ``local_account`` (a contestant, by name) and ``acting_organiser``
(``NoActingOrganiser``). The functions take a ``grader.service.database.Database`` (a
``Service`` is one) for its transactions.
"""
from __future__ import annotations

import csv
import hashlib
import hmac
import io
import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import db.accounts as accounts_db
import db.users as users_db
import db.web_sessions as sessions_db
from grader.display import hidden_characters
from grader.refusals import BadRequest, Forbidden, NotAuthenticated

from .database import Database

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


TOKEN_PREFIX = "kdt_"
TOKEN_BYTES = 32
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,200}")


@dataclass(frozen=True)
class Account:
    """An authenticated user: ``id``, ``name`` (unique login), ``display_name`` (or None), ``is_admin``."""

    id: int
    name: str
    display_name: str | None
    is_admin: bool

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Account:
        return cls(row["id"], row["name"], row["display_name"], bool(row["is_admin"]))


def new_token() -> str:
    """A new random bearer token: ``kdt_`` + 43 URL-safe characters (32 random bytes)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    """The lowercase hex SHA-256 of the token's UTF-8 bytes (what the database stores)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_name(name: str) -> str:
    """``name`` if it is a valid account name (1..100 characters: letters, digits, ``_ . -``, not starting
    with a punctuation mark), else ``BadRequest`` saying so."""
    if not NAME_PATTERN.fullmatch(name or ""):
        raise BadRequest(f"invalid user name {name!r}: use 1..100 letters, digits, '_', '.' or '-', "
                         "starting with a letter or digit")
    return name


def _display_name(display_name: str | None) -> str | None:
    if display_name is None or not display_name.strip():
        return None
    display_name = display_name.strip()
    hidden = hidden_characters(display_name)
    if len(display_name) > 200 or hidden:
        raise BadRequest("a display name has at most 200 characters and no control or invisible formatting "
                         f"characters{' (found ' + ', '.join(hidden[:5]) + ')' if hidden else ''}")
    return display_name


def add_user(database: Database, name: str, display_name: str | None = None,
             is_admin: bool = False) -> tuple[dict[str, Any], str]:
    """Create an account; return ``(account dict, token)``. The token is not stored and cannot be shown
    again. Raises ``BadRequest`` for an invalid or taken name (then nothing is written)."""
    check_name(name)
    token = new_token()
    with database.session() as session:
        try:
            row = accounts_db.create_account(session, name, hash_token(token), _display_name(display_name),
                                             is_admin)
        except accounts_db.AccountExists as exc:
            raise BadRequest(f"{exc}; `admin users reset-token {name}` gives it a new token") from None
    return row, token


def parse_user_csv(text: str) -> list[tuple[str, str | None]]:
    """``name[,display_name]`` lines (blank lines and a ``name,...`` header skipped) as pairs, display
    names cleaned (``None`` when blank). Raises ``BadRequest`` naming the line of the first invalid or
    repeated name or invalid display name."""
    return [(name, display_name) for _number, name, display_name in _user_lines(text)]


def _user_lines(text: str) -> list[tuple[int, str, str | None]]:
    """``parse_user_csv`` with each user's line number (1-based) first."""
    users, seen = [], set()
    # \r\n, \n or a bare \r ends a line (old spreadsheet exports), as the CLI's read_text() reads them
    for number, fields in enumerate(csv.reader(io.StringIO(text, newline=None)), start=1):
        if not fields or not any(f.strip() for f in fields):
            continue
        name = fields[0].strip()
        if number == 1 and name.lower() in ("name", "user"):
            continue
        if len(fields) > 2:
            raise BadRequest(f"line {number}: expected name[,display_name], got {len(fields)} fields")
        try:
            check_name(name)
            display_name = _display_name(fields[1] if len(fields) > 1 else None)
        except BadRequest as exc:
            raise BadRequest(f"line {number}: {exc.message}") from None
        if name in seen:
            raise BadRequest(f"line {number}: {name!r} appears twice")
        seen.add(name)
        users.append((number, name, display_name))
    return users


def import_users(database: Database, users: list[tuple[str, str | None]],
                 lines: list[int] | None = None) -> list[tuple[str, str]]:
    """Create every ``(name, display_name)`` account in one transaction; return ``[(name, token)]``. If one
    name is taken or invalid, ``BadRequest`` names it (and its line, given ``lines``: each user's line
    number) and no account is created."""
    created = []
    with database.session() as session:
        for index, (name, display_name) in enumerate(users):
            where = f"line {lines[index]}: " if lines else ""
            try:
                check_name(name)
                token = new_token()
                accounts_db.create_account(session, name, hash_token(token), _display_name(display_name))
            except BadRequest as exc:
                raise BadRequest(f"{where}{exc.message}; nothing was imported") from None
            except accounts_db.AccountExists as exc:
                raise BadRequest(f"{where}{exc}; nothing was imported") from None
            created.append((name, token))
    return created


def import_user_csv(database: Database, text: str) -> list[tuple[str, str]]:
    """Create the users of ``text`` (``parse_user_csv``'s format) in one transaction: ``[(name, token)]``.
    All or nothing: ``BadRequest`` names the line of the first invalid, repeated or taken name."""
    parsed = _user_lines(text)
    return import_users(database, [(name, display) for _n, name, display in parsed], [n for n, _, _ in parsed])


def list_users(database: Database) -> list[dict[str, Any]]:
    """Every user with its flags and submission count, by name (``db.accounts.list_accounts``)."""
    with database.session() as session:
        return accounts_db.list_accounts(session)


def set_disabled(database: Database, name: str, disabled: bool) -> dict[str, Any]:
    """Disable (the token answers 403, its page sessions end) or enable user ``name``. ``LookupError`` for an unknown name."""
    with database.session() as session:
        row = accounts_db.set_disabled(session, name, disabled)
        if disabled:  # its page sessions end with it (grader.service.login_sessions)
            sessions_db.delete_user_web_sessions(session, row["id"])
        return row


def reset_token(database: Database, name: str) -> str:
    """Give user ``name`` a new token (the old one stops working at once, and every page session of the
    account ends: ``grader.service.login_sessions``) and return it. ``LookupError``
    for an unknown name."""
    token = new_token()
    with database.session() as session:
        row = accounts_db.set_token_hash(session, name, hash_token(token))
        sessions_db.delete_user_web_sessions(session, row["id"])  # every page session logged in with the old one
    return token


def authenticate(database: Database, token: str | None) -> Account:
    """The account a bearer token belongs to. Raises ``NotAuthenticated`` (401) for a missing, malformed or
    unknown token and ``Forbidden`` (403) for a disabled account. The token itself is never put in a
    message."""
    token = well_formed(token)
    with database.read_session() as session:
        return account_for(session, token)


def well_formed(token: str | None) -> str:
    """``token`` if it has the form of a token; ``NotAuthenticated`` (401) for none or a malformed one.
    Needs no database: the server refuses such a request before reading its body."""
    if not token:
        raise NotAuthenticated("this needs a token: send the header `Authorization: Bearer TOKEN` "
                               "(`kdt-grade login --server URL --token TOKEN` saves yours)")
    if not _TOKEN_PATTERN.fullmatch(token):
        raise NotAuthenticated("the token is malformed; copy it again from what the organisers gave you")
    return token


def account_for(session: Session, token: str) -> Account:
    """``authenticate`` of a ``well_formed`` token in a session the caller holds (the API's intake reads
    the account and the contest's rules in one snapshot). Raises ``NotAuthenticated`` (401, unknown) or
    ``Forbidden`` (403, disabled)."""
    digest = hash_token(token)
    row = accounts_db.find_by_token_hash(session, digest)
    if row is None or not hmac.compare_digest(row["token_hash"], digest):
        raise NotAuthenticated("unknown token; check it, or ask the organisers for a new one")
    if row["disabled"]:
        raise Forbidden(f"the account {row['name']!r} is disabled; ask the organisers", code="disabled")
    return Account.from_row(row)


def _enabled(row: dict[str, Any]) -> Account:
    if row["disabled"]:
        raise Forbidden(f"the account {row['name']!r} is disabled; `admin users enable {row['name']}` enables it",
                        code="disabled")
    return Account.from_row(row)


def local_account(database: Database, name: str, create: bool = False) -> Account:
    """The account of user ``name`` for a contestant's command run on this database (no server: the name
    stands for the token). With ``create`` a missing user is created as a local ``kdt-grade submit``
    creates its user, its name checked by ``check_name`` (``BadRequest``); without, a missing user is
    ``LookupError``. A disabled account is ``Forbidden``, as its token would be on the server."""
    with database.session() as session:
        row = accounts_db.get_account(session, name)
        if row is None:
            if not create:
                raise LookupError(f"no user called {name!r}")
            users_db.get_or_create_user(session, check_name(name))
            row = accounts_db.get_account(session, name)
    return _enabled(row)


class NoActingOrganiser(LookupError):
    """``acting_organiser`` found no organiser to act as: ``organisers`` are the names of the database's
    enabled organiser accounts (sorted), ``name`` the one asked for (None: none was named, and there is not
    exactly one)."""

    def __init__(self, organisers: list[str], name: str | None):
        wanted = f"{name!r} is not an enabled organiser" if name else f"{len(organisers)} enabled organisers"
        super().__init__(f"{wanted} (the organisers: {', '.join(organisers) or 'none'})")
        self.organisers, self.name = organisers, name


def acting_organiser(database: Database, name: str | None = None) -> Account:
    """The organiser account an organiser's command run on this database acts as (and is recorded as the
    one who answered or announced): the enabled organiser ``name``, or, with ``name`` None, the database's
    only enabled organiser. ``NoActingOrganiser`` when ``name`` is not one, or when none is named and
    there are none or several."""
    with database.read_session() as session:
        organisers = [r for r in accounts_db.list_accounts(session) if r["is_admin"] and not r["disabled"]]
    chosen = [r for r in organisers if name is None or r["name"] == name]
    if len(chosen) != 1:
        raise NoActingOrganiser([r["name"] for r in organisers], name)
    return Account.from_row(chosen[0])
