"""Taking in an upload for an account, shared by the API (``api_contestant``) and the page form (``pages``).

- ``check``: the contest's rules in a read-only snapshot (``grader.contest.check``), before any work;
  organisers are not held to the window and limits;
- ``take``: the API's whole intake in one trip to the thread pool: the token's account and the rules in
  one snapshot, then ``accept``;
- ``accept``: ``Service.accept`` with the rules checked again inside its transaction (``contest.admit``),
  then the id handed to the grading dispatcher. Refusals (``pipeline.Rejected``, ``refusals.Refusal``)
  propagate and nothing is stored.
"""
from __future__ import annotations

from grader import accounts, contest
from grader.accounts import Account
from grader.service import Service


def check(service: Service, account: Account) -> None:
    """Raise the ``Refusal`` the contest's rules give ``account`` now (none for an organiser)."""
    if not account.is_admin:
        contest.check(service, account.id)


def accept(service: Service, dispatcher, account: Account, file_name: str, data: bytes) -> int:
    """Store the upload as ``account``'s submission and start its grading (``dispatcher.dispatch``);
    return its id. Raises ``pipeline.Rejected`` (400), ``refusals.Refusal`` (403/429) or
    ``ServiceUnavailable`` (503), with nothing stored."""
    admit = None if account.is_admin else contest.admit
    submission_id = service.accept(data, file_name, account.name, admit, user_id=account.id)
    dispatcher.dispatch(submission_id)
    return submission_id


def take(service: Service, dispatcher, token: str, file_name: str, data: bytes) -> int:
    """The API's intake of an upload sent with a ``well_formed`` bearer token: the token's account
    (``accounts.account_for``) and the contest's rules (``contest.check_in``) read in one snapshot, then
    ``accept``; return the id. Raises what those raise: ``NotAuthenticated`` (401), ``Forbidden`` (403),
    ``TooMany`` (429), ``pipeline.Rejected`` (400), ``ServiceUnavailable`` (503), with nothing stored."""
    with service.read_session() as session:
        account = accounts.account_for(session, token)
        if not account.is_admin:
            contest.check_in(session, account.id)  # a refusal stores nothing at all
    return accept(service, dispatcher, account, file_name, data)
