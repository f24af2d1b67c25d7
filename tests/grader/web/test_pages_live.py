"""The live parts of the pages over a real ``kdt-grade serve``, with plain HTTP: the header's contest clock
(its text before the start, while running with a freeze to come or in force, after the end; the server's
times for ``static/live.js``) on every page."""
from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from html import unescape

import httpx

from grader.service import contest
from pages_testlib import server  # noqa: F401 (a fixture)


def clock_of(html: str) -> tuple[dict, str]:
    """The header clock's data attributes and its text."""
    found = re.search(r'<div class="clock" id="contest-clock" ([^>]*)>([^<]*)</div>', html)
    assert found, html[:2000]
    return dict(re.findall(r'data-([a-z]+)="([^"]*)"', found.group(1))), unescape(found.group(2))


def ms(moment: datetime) -> str:
    return str(int(moment.timestamp() * 1000))


def test_the_header_clock_before_during_and_after_the_contest(server):
    service = server.deployment.service
    now = datetime.now(UTC).replace(microsecond=0)
    starts = now + timedelta(hours=2)
    contest.set_rules(service, starts_at=starts, ends_at=starts + timedelta(hours=5))
    before = time.time() * 1000
    data, text = clock_of(httpx.get(f"{server.url}/rules", timeout=30).text)
    assert re.fullmatch(r"Starts in 1:59:[0-5]\d", text), text
    assert data["phase"] == "before" and data["starts"] == ms(starts) and data["ends"] == ms(starts + timedelta(hours=5))
    assert before - 2000 <= int(data["now"]) <= time.time() * 1000 + 2000  # the server's time, in ms

    # running, the scheduled freeze to come: both counted down
    contest.set_rules(service, starts_at=now - timedelta(hours=1), ends_at=now + timedelta(days=2, hours=3),
                      freeze_at=now + timedelta(hours=1))
    for path in ("/", "/rules", "/login", "/submissions/99"):  # every page, the error pages too
        response = httpx.get(f"{server.url}{path}", timeout=30, follow_redirects=True)
        data, text = clock_of(response.text)
        assert re.fullmatch(r"Ends in 2 d 0[23]:[0-5]\d:[0-5]\d · freeze in 0:59:[0-5]\d", text), (path, text)
        assert data["phase"] == "running" and data["freeze"] == ms(now + timedelta(hours=1)) and data["frozen"] == "0"
        assert '<script src="/static/live.js" defer></script>' in response.text  # logged in or not
        assert re.search(r'<time id="server-time" datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</time>',
                         response.text)

    # the freeze in force: no countdown to it, "frozen" instead
    contest.set_rules(service, freeze_at=now - timedelta(minutes=5))
    data, text = clock_of(httpx.get(f"{server.url}/", timeout=30).text)
    assert re.fullmatch(r"Ends in 2 d 0[23]:[0-5]\d:[0-5]\d · scoreboard frozen", text), text
    assert data["frozen"] == "1" and data["freeze"] == ""

    # after the end
    contest.set_rules(service, freeze_at=None, ends_at=now - timedelta(minutes=1))
    data, text = clock_of(httpx.get(f"{server.url}/rules", timeout=30).text)
    assert text == "Contest over" and data["phase"] == "over"

    # no contest times at all
    contest.set_rules(service, starts_at=None, ends_at=None)
    data, text = clock_of(httpx.get(f"{server.url}/rules", timeout=30).text)
    assert text == "Running (no end time)" and data["phase"] == "open" and data["starts"] == data["ends"] == ""
