"""The Messages page, the unread badge and the organisers' questions on ``/admin``, over a real server with
plain HTTP: CSRF on every form, a refusal shown on the page (400, 429), hostile texts escaped everywhere,
the badge's counts on every page and its live document (401, 200, 304 with the same ETag, a new tag once
something is answered), reading the page marks read, answer / answer to all reworded / ignore / announce."""
from __future__ import annotations

import re
import time
from html import unescape

from grader.service import contest
from pages_testlib import csrf_of, server, wait_until  # noqa: F401  (server: a fixture)

HOSTILE = "<script>alert('q')</script> & <b>bold</b>"
ESCAPED = "&lt;script&gt;alert(&#39;q&#39;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"


def badge(html: str) -> tuple[str, bool] | None:
    """(text, hidden) of the page's badge, None when it has none."""
    found = re.search(r'<span class="badge" id="msg-badge"[^>]*?( hidden)?>([^<]*)</span>', html)
    return None if found is None else (found.group(2), bool(found.group(1)))


def test_messages_page_badge_and_admin_questions(server):
    alice, bob, root = server.add_user("alice"), server.add_user("bob"), server.add_user("root", admin=True)
    a, b, org = server.client(alice), server.client(bob), server.client(root)
    anonymous = server.client()
    assert anonymous.get("/messages").headers["location"] == "/login?next=/messages"
    assert anonymous.get("/messages.json").status_code == 401
    assert badge(anonymous.get("/").text) is None

    page = a.get("/messages")
    assert page.status_code == 200 and "No announcements yet." in page.text and "No questions yet." in page.text
    assert badge(page.text) == ("0", True)
    csrf = csrf_of(page.text)
    assert a.post("/messages", data={"text": "forged", "csrf": "wrong"}).status_code == 403
    asked = a.post("/messages", data={"text": HOSTILE, "task": "3", "csrf": csrf})
    assert asked.status_code == 303 and asked.headers["location"] == "/messages?notice=asked"
    shown = a.get("/messages?notice=asked").text
    assert "Your question is sent." in shown and ESCAPED in shown and "<script>alert" not in shown
    assert "Task 3 · your question" in shown and "Waiting for an answer." in shown
    refused = a.post("/messages", data={"text": "x" * 2001, "csrf": csrf})
    assert refused.status_code == 400
    assert "the question has 2001 characters; at most 2000 are allowed" in refused.text
    assert ">" + "x" * 2001 + "</textarea>" in refused.text  # the text is kept for editing
    assert a.post("/messages", data={"text": "?", "task": "9", "csrf": csrf}).status_code == 400
    b.post("/messages", data={"text": "My submission is stuck", "csrf": csrf_of(b.get("/messages").text)})
    contest.set_rules(server.deployment.service, max_questions_per_hour=1)
    limited = a.post("/messages", data={"text": "another one", "csrf": csrf})
    assert limited.status_code == 429 and "at most 1 questions per hour: try again in " in limited.text
    contest.set_rules(server.deployment.service, max_questions_per_hour=None)

    live = a.get("/messages.json")
    assert live.status_code == 200 and live.json() == {"answers": 0, "announcements": 0, "total": 0}
    tag = live.headers["etag"]
    unchanged = a.get("/messages.json", headers={"If-None-Match": tag})
    assert unchanged.status_code == 304 and unchanged.headers["etag"] == tag
    assert unchanged.headers["cache-control"] == "private, no-cache"

    admin = org.get("/admin").text
    queue = re.search(r'<ul class="messages" id="open-questions">(.*?)</ul>', admin, re.S).group(1)
    assert [int(i) for i in re.findall(r'<li class="message" id="q-(\d+)"', queue)] == [1, 2]  # oldest first
    assert ESCAPED in queue and "<script>alert" not in admin and "<strong>alice</strong>" in queue
    org_csrf = csrf_of(admin)
    assert org.post("/admin/clarifications/1/answer", data={"text": "x", "to": "all", "csrf": "no"}).status_code == 403
    assert a.post("/admin/clarifications/1/answer", data={"text": "x", "csrf": csrf}).status_code == 403
    done = org.post("/admin/clarifications/1/answer",
                    data={"text": "Yes <i>it is</i>.", "public_text": "Is <the> threshold right?", "to": "all",
                          "csrf": org_csrf})
    assert done.status_code == 303 and done.headers["location"] == "/admin?notice=answered_all&id=1"
    assert "Question 1 and its answer are published to everyone." in org.get(done.headers["location"]).text
    empty = org.post("/admin/clarifications/2/answer", data={"text": " ", "to": "author", "csrf": org_csrf})
    assert empty.status_code == 400 and "The answer is empty." in empty.text
    assert org.post("/admin/clarifications/2/ignore", data={"csrf": org_csrf}).headers["location"] == \
        "/admin?notice=ignored&id=2"
    assert org.post("/admin/clarifications/9/ignore", data={"csrf": org_csrf}).headers["location"] == \
        "/admin?notice=no_question&id=9"
    made = org.post("/admin/announce", data={"text": "Contest <extended>", "pinned": "1", "csrf": org_csrf})
    assert made.headers["location"] == "/admin?notice=announced"
    admin = org.get("/admin").text
    assert "No open questions." in admin and "Recently handled (2)" in admin
    assert "Is &lt;the&gt; threshold right?" in admin

    changed = a.get("/messages.json", headers={"If-None-Match": tag})  # her counts changed: a new tag at once
    assert changed.headers["etag"] != tag
    assert changed.json() == {"answers": 1, "announcements": 1, "total": 2}
    assert badge(a.get("/submissions").text) == ("2", False)  # on every page
    mine = a.get("/messages").text
    assert "Yes &lt;i&gt;it is&lt;/i&gt;." in mine and ESCAPED in mine  # her own words to herself
    assert "Contest &lt;extended&gt;" in mine and "<strong>Pinned</strong>" in mine
    assert badge(mine) == ("0", True)  # reading the page marks everything read
    read = a.get("/messages.json")
    assert read.json()["total"] == 0
    # another contestant's private question changes nothing of alice's tag (attacker review: a tag made from
    # the server's change stamp told everyone, to the second, when anyone asked)
    b.post("/messages", data={"text": "a private question", "csrf": csrf_of(b.get("/messages").text)})
    time.sleep(1.2)
    assert a.get("/messages.json", headers={"If-None-Match": read.headers["etag"]}).status_code == 304
    bobs = b.get("/messages").text
    public = re.search(r'<li class="message state-answered" data-id="1" data-mine="0">(.*?)</li>', bobs, re.S).group(1)
    assert "Is &lt;the&gt; threshold right?" in public and "asked by a contestant" in public
    assert "alice" not in unescape(bobs.split("<main>")[1])
    assert "The organisers closed this question without an answer." in bobs  # his ignored question
    assert root not in server.log() and alice not in server.log()
