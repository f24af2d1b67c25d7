"""The rules over a real ``kdt-grade serve``: the public ``/rules`` page (every task's thresholds, the limits
set with ``contest.set_rules``, the worked example, linked from every page's header), ``GET
/api/v1/rules`` (no token; the service's document exactly) and ``kdt-grade rules`` against the server."""
from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from html import unescape

import httpx

from grader.service import contest
from grader.service.rules_text import contestant_rules
from judger.tasks import TASKS
from pages_testlib import server  # noqa: F401 (a fixture)
from tests.grader.service.service_testlib import clean_env, run_cli

NAV_LINK = '<a href="/rules">Rules</a>'


def row_cells(html: str, row_id: str) -> list[str]:
    row = re.search(rf'<tr id="{row_id}".*?</tr>', html, re.S).group(0)
    return [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def _set_rules(service) -> None:
    contest.set_rules(service, name="KDT <2026>", starts_at=datetime(2026, 1, 1, 1, tzinfo=UTC),
                      ends_at=datetime(2999, 1, 1, tzinfo=UTC), freeze_at=datetime(2998, 12, 31, 20, tzinfo=UTC),
                      min_interval_seconds=30, max_per_hour=12, max_pending=2, max_questions_per_hour=5)


def test_the_rules_page_shows_every_threshold_and_the_limits_set(server):
    _set_rules(server.deployment.service)
    page = httpx.get(f"{server.url}/rules", timeout=30)  # public: no login
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    html = page.text
    assert "<title>Rules · kdt-grade</title>" in html and NAV_LINK in html
    assert "KDT &lt;2026&gt;" in html and "KDT <2026>" not in html  # the contest's name, escaped
    assert "<code>score = 100 if cycles &lt;= T, else 10 + 90 * (T / cycles) ** 4</code>" in html
    for task in TASKS.values():
        for point in task.points:
            cells = row_cells(html, f"rule-{task.id}-{point.index}")
            assert cells[-5] == f"{point.threshold:,}", (task.id, point.index, cells)
    assert row_cells(html, "rule-1-0") == ["1", "vector add", "10", "1 SM, L_mem 50, SPM 128 KiB", "0", "N = 16384",
                                           "1,919,810", "1,977,180", "2,082,526", "2,351,277", "3,004,665"]
    assert row_cells(html, "rule-4-3") == ["3", "S_qo = 2048, S_kv = 4096, D = 128", "142,469", "146,726",
                                           "154,544", "174,488", "222,976"]
    limits = dict(re.findall(r'<tr data-key="([a-z_]+)"><th>[^<]*</th><td>([^<]*)</td></tr>', html))
    assert limits == {"starts_at": "2026-01-01 01:00:00 UTC", "ends_at": "2999-01-01 00:00:00 UTC",
                      "freeze_at": "2998-12-31 20:00:00 UTC", "min_interval_seconds": "30 s at least",
                      "max_per_hour": "12 at most", "max_pending": "2 at most", "max_questions_per_hour": "5 at most",
                      "max_bytes": "1,048,576 bytes at most"}
    assert "= 10 + 90 / 1.25^4 = 46.86;" in html and "Equal totals rank by the earlier submission first" in html
    # every verdict in one line, the trials, the tolerances and the time limit: the service's exact words
    doc = contestant_rules(server.deployment.service)
    items = re.findall(r'<li data-verdict="([A-Z]+)">([^<]*)</li>', html)
    assert [(v, unescape(text)) for v, text in items] == [(v["verdict"], v["text"]) for v in doc["verdicts"]]
    assert unescape(items[4][1]) == "TLE (time limit exceeded): a launch ran past its time limit (on the judge: CPU time, whatever the machine's load)."
    for key in ("trials", "correct", "time_limit"):
        paragraph = re.search(rf'<p id="rules-{key.replace("_", "-")}">([^<]*)</p>', html).group(1)
        assert unescape(paragraph) == doc["scoring"][key], key
    assert "Time limit: 20 s of CPU time per kernel launch (one trial) on the judge&#39;s machine" in html
    assert "tasks 2, 3 and 4: abs_tol 1e-05, rel_tol 0.002." in html

    # linked from the header of every page, logged in or not
    token = server.add_user("alice")
    client = server.client(token)
    for path in ("/", "/login", "/submissions", "/submit", "/messages", "/rules"):
        assert NAV_LINK in client.get(path).text, path
    assert NAV_LINK in httpx.get(f"{server.url}/login", timeout=30).text


def test_the_rules_api_and_the_cli_against_the_server(server, tmp_path):
    _set_rules(server.deployment.service)
    response = httpx.get(f"{server.url}/api/v1/rules", timeout=30)  # no token
    assert response.status_code == 200
    doc = response.json()
    assert doc == json.loads(json.dumps(contestant_rules(server.deployment.service)))
    assert doc["contest"]["limits"] == {"min_interval_seconds": 30.0, "max_per_hour": 12, "max_pending": 2,
                                        "max_questions_per_hour": 5, "max_bytes": 1048576}
    assert doc["contest"]["frozen"] is False and doc["example"]["cycles"] == 13750

    # the client: no token needed, and the server's rules (this environment has no database of its own)
    env = {**clean_env(), "XDG_CONFIG_HOME": str(tmp_path / "config"), "COLUMNS": "160",
           "KDT_GRADE_SERVER": server.url}
    assert json.loads(run_cli(["rules", "--json"], env).stdout) == doc
    text = run_cli(["rules"], env).stdout
    assert text.startswith("Rules of KDT <2026>\n")
    assert "│ Your submissions in any hour          │ 12 at most" in text
    assert "│ Time between two of your submissions  │ 30 s at least" in text
    assert "│    4 │ flash attention            │     40 │     0 │ S_qo=1024 S_kv=128 D=128  │       8,000 │     8,239 │" in text
    down = run_cli(["rules"], {**env, "KDT_GRADE_SERVER": "http://127.0.0.1:9"}, check=False)
    assert down.returncode == 1 and "cannot reach the server http://127.0.0.1:9" in down.stderr
