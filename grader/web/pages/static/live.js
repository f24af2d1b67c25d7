// kdt-grade pages: live updates (the pages work without this file, only without live updates).
// The scoreboard asks /scoreboard.json?since=VERSION: 304 when nothing changed, else only the rows that
// changed. A submission page being graded asks its status.json (304 while nothing changed). The
// messages badge of a logged-in user asks /messages.json the same way (ETag, 304 while nothing changed). All text
// is set with textContent: nothing from the server is parsed as HTML.
// The header's contest clock ticks every second from the server's time (the page's data-now, kept as an
// offset to the browser's clock, so a wrong browser clock does not matter) and says so when the contest
// starts, the scoreboard freezes or the contest ends, without a reload; the footer's server time ticks too.
"use strict";

const pad2 = n => String(n).padStart(2, "0");

// The same text as render.countdown_text: 0:04:05, 12:00:00, 3 d 04:05:06.
function countdown(ms) {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const days = Math.floor(seconds / 86400), hours = Math.floor(seconds % 86400 / 3600);
  const minutes = Math.floor(seconds % 3600 / 60), secs = seconds % 60;
  if (days) return days + " d " + pad2(hours) + ":" + pad2(minutes) + ":" + pad2(secs);
  return hours + ":" + pad2(minutes) + ":" + pad2(secs);
}

// The clock's state at server time `now` (ms): as render.clock_phase and render.clock_text.
function clockState(times, now) {
  if (times.starts !== null && now < times.starts)
    return {phase: "before", frozen: false, text: "Starts in " + countdown(times.starts - now)};
  if (times.ends !== null && now >= times.ends) return {phase: "over", frozen: false, text: "Contest over"};
  const open = times.starts === null && times.ends === null;
  let text = times.ends !== null ? "Ends in " + countdown(times.ends - now) : "Running (no end time)";
  const frozen = times.frozen || (times.freeze !== null && now >= times.freeze);
  if (frozen) text += " \u00b7 scoreboard frozen";
  else if (times.freeze !== null) text += " \u00b7 freeze in " + countdown(times.freeze - now);
  return {phase: open ? "open" : "running", frozen, text};
}

const NOTICES = {running: "The contest has started.", over: "The contest has ended.",
                 frozen: "The scoreboard is now frozen: it shows only submissions made before this moment."};

function serverTimeText(ms) {
  return new Date(ms).toISOString().slice(0, 19).replace("T", " ") + " UTC";
}

function liveClock(clock) {
  const number = name => clock.dataset[name] ? Number(clock.dataset[name]) : null;
  const offset = Number(clock.dataset.now) - Date.now();  // server minus browser, fixed at load
  const times = {starts: number("starts"), ends: number("ends"), freeze: number("freeze"),
                 frozen: clock.dataset.frozen === "1"};
  const footer = document.getElementById("server-time");
  const notice = document.getElementById("clock-notice");
  let last = clockState(times, Number(clock.dataset.now));
  function say(text) {
    notice.textContent = text;
    notice.hidden = false;
  }
  function tick() {
    const now = Date.now() + offset;
    const state = clockState(times, now);
    clock.textContent = state.text;
    clock.dataset.phase = state.phase;
    if (state.phase !== last.phase && NOTICES[state.phase]) say(NOTICES[state.phase]);
    else if (state.frozen && !last.frozen && state.phase === "running") say(NOTICES.frozen);
    last = state;
    if (footer) {
      footer.textContent = serverTimeText(now);
      footer.dateTime = new Date(now).toISOString();
    }
    const left = document.querySelector("#banner .left");
    if (left && times.ends !== null) left.textContent = countdown(times.ends - now);
    setTimeout(tick, 1000 - (now % 1000) + 5);  // just after the server clock's next second
  }
  tick();
}

function cell(text, cls) {
  const td = document.createElement("td");
  if (cls) td.className = cls;
  td.textContent = text;
  return td;
}

async function getJSON(url, etag) {
  const headers = etag ? {"If-None-Match": etag} : {};
  const response = await fetch(url, {headers, cache: "no-store", credentials: "same-origin"});
  if (response.status === 304) return {unchanged: true, etag};
  if (!response.ok) throw new Error(url + ": HTTP " + response.status);
  return {data: await response.json(), etag: response.headers.get("ETag")};
}

// own: the viewer's pending mark while the board is frozen (the table's data-own-*), kept on their row.
function boardRow(row, own) {
  const tr = document.createElement("tr");
  tr.dataset.user = row.user;
  const name = cell(row.name, "col-name");
  if (own.user && row.user === own.user) {
    const mark = document.createElement("span");
    mark.className = "pending";
    mark.title = own.title;
    mark.textContent = own.label;
    name.append(" ", mark);
    tr.className = "own";
  }
  tr.append(cell(row.rank, "num col-rank"), name);
  row.tasks.forEach((s, i) => tr.append(cell(s, ("num " + (row.bands?.[i] || "")).trim())));
  tr.append(cell(row.total, "num total"));
  const td = document.createElement("td");
  td.className = "col-at";
  const time = document.createElement("time");
  time.dateTime = row.created;
  time.textContent = row.created_text;
  td.append(time);
  tr.append(td);
  return tr;
}

function liveScoreboard(table) {
  const body = table.tBodies[0];
  const own = {user: table.dataset.ownUser, label: table.dataset.ownLabel, title: table.dataset.ownTitle};
  let version = table.dataset.version;
  async function tick() {
    try {
      const url = "/scoreboard.json?since=" + encodeURIComponent(version);
      const response = await fetch(url, {cache: "no-store"});
      if (response.status === 200) {
        const doc = await response.json();
        if (doc.full) body.replaceChildren();
        const byUser = new Map([...body.querySelectorAll("tr[data-user]")].map(tr => [tr.dataset.user, tr]));
        for (const user of doc.removed || []) byUser.get(user)?.remove();
        for (const row of doc.changed) {
          const fresh = boardRow(row, own);
          const old = byUser.get(row.user);
          if (old) old.replaceWith(fresh); else body.append(fresh);
        }
        const rows = [...body.querySelectorAll("tr[data-user]")];
        rows.sort((a, b) => Number(a.cells[0].textContent) - Number(b.cells[0].textContent));
        body.querySelector("tr.empty")?.remove();
        body.append(...rows);
        version = doc.version;
        table.dataset.version = version;
        table.dataset.updates = String(Number(table.dataset.updates || 0) + 1);
        const notice = document.getElementById("frozen-notice");
        if (notice) notice.hidden = !doc.frozen;
      }
    } catch (err) {
      console.warn("scoreboard update failed", err);
    }
    setTimeout(tick, Number(table.dataset.interval || 4000));
  }
  setTimeout(tick, Number(table.dataset.interval || 4000));
}

const REUSED_TITLE = "not simulated again: this judge graded the same compiled kernel before (same IR and test point), and this is that result";

function setPoint(tr, p) {
  tr.dataset.state = p.state;
  const f = name => tr.querySelector('[data-f="' + name + '"]');
  const verdict = document.createElement("span");
  verdict.className = "verdict v-" + p.verdict_class;
  verdict.title = p.verdict_title;
  verdict.textContent = p.verdict;
  f("verdict").replaceChildren(verdict);
  if (p.reused) {  // as the page renders it
    const mark = document.createElement("span");
    mark.className = "reused";
    mark.title = REUSED_TITLE;
    mark.textContent = "reused";
    f("verdict").append(" ", mark);
  }
  f("cycles").textContent = p.cycles;
  f("score").textContent = p.score;
  f("for_100").textContent = p.for_100;
  f("for_plus_10").textContent = p.for_plus_10;
  f("utilisation").textContent = p.utilisation;
  if (p.message) {
    const pre = document.createElement("pre");
    pre.className = "message";
    for (const [text, line] of p.message_parts) {  // as the page renders them: "Line N" links to the listing
      if (line === null) {
        pre.append(text);
        continue;
      }
      const link = document.createElement("a");
      link.className = "src-line";
      link.href = "#L-" + line;
      link.textContent = text;
      pre.append(link);
    }
    f("message").replaceChildren(pre);
  } else {
    f("message").replaceChildren();
  }
  if (p.timeline && !document.getElementById("tl-" + p.task + "-" + p.point)) {
    const link = document.createElement("a");
    link.className = "tl-link";
    link.href = p.picture;
    link.textContent = "picture";
    f("timeline").replaceChildren(link);
    const item = document.getElementById("timeline-template").content.firstElementChild.cloneNode(true);
    item.id = "tl-" + p.task + "-" + p.point;
    item.dataset.task = p.task;
    item.dataset.point = p.point;
    item.querySelector("summary").textContent = "Task " + p.task + ", point " + p.point + ": " + p.verdict +
      (p.cycles ? ", " + p.cycles + " cycles" : "");
    item.querySelector(".tl-note").textContent = p.threshold_note;
    item.querySelector("iframe").src = p.timeline;
    item.querySelector("iframe").style.height = (p.height + 4) + "px";
    item.querySelector("iframe").style.setProperty("--tl-width", p.width + "px");
    item.querySelector(".tl-open").href = p.timeline;
    item.querySelector(".tl-perfetto").href = p.perfetto;
    const zooms = item.querySelector(".tl-zooms");
    for (const z of p.zooms || []) {
      const a = document.createElement("a");
      a.className = "tl-zoom";
      a.href = z.url;
      a.dataset.width = z.width;
      a.dataset.zoom = z.zoom;
      a.textContent = z.zoom + "\u00d7";
      if (z.zoom === 1) a.setAttribute("aria-current", "true");
      zooms.append(a, " ");
    }
    const list = document.getElementById("timelines");
    const later = [...list.children].find(el =>
      Number(el.dataset.task) * 100 + Number(el.dataset.point) > p.task * 100 + p.point);
    list.insertBefore(item, later || null);  // in test point order, as the server renders them
    if (location.hash === "#" + item.id) item.open = true;  // the page was opened at it before it existed
  }
}

function liveSubmission(table) {
  let etag = null;
  async function tick() {
    let again = true;
    try {
      const got = await getJSON(table.dataset.statusUrl, etag);
      if (!got.unchanged) {
        etag = got.etag;
        const doc = got.data;
        for (const p of doc.points) {
          const tr = document.getElementById("pt-" + p.task + "-" + p.point);
          if (tr) setPoint(tr, p);
        }
        const status = document.getElementById("sub-status");
        status.textContent = doc.status;
        status.className = "status status-" + doc.status;
        document.getElementById("sub-total").textContent = doc.total;
        for (const [task, score] of Object.entries(doc.tasks)) {
          const td = document.querySelector('[data-task-score="' + task + '"]');
          if (td) td.textContent = score;
        }
        table.dataset.updates = String(Number(table.dataset.updates || 0) + 1);
        if (doc.status === "done" || doc.status === "failed") {
          again = false;
          table.dataset.live = "0";
          document.getElementById("live-hint")?.remove();
        }
      }
    } catch (err) {
      console.warn("status update failed", err);
    }
    if (again) setTimeout(tick, 1500);
  }
  setTimeout(tick, 1000);
}

// A submissions list (My submissions, the organisers' list) while one of its rows is queued or running:
// its live URL answers {"live", "rows"} (304 while unchanged); each shown row gets its status, verdicts at
// a glance, scores and the "counts" mark; polling stops once nothing is queued or running.
function setMarks(td, marks) {
  const parts = [];
  marks.forEach((m, i) => {
    if (i) parts.push(" \u00b7 ");
    const span = document.createElement("span");
    span.className = "verdict " + m.cls;
    span.title = m.title;
    span.textContent = m.text;
    parts.push(span);
  });
  td.replaceChildren(...parts);
}

function setListRow(tr, row) {
  const f = name => tr.querySelector('[data-f="' + name + '"]');
  const status = document.createElement("span");
  status.className = "status status-" + row.status;
  status.textContent = row.status;
  f("status").replaceChildren(status);
  setMarks(f("verdicts"), row.marks);
  row.tasks.forEach((score, i) => { f("task" + (i + 1)).textContent = score; });
  f("total").textContent = row.total;
  const counts = f("counts");
  if (row.counts && !counts.querySelector(".counts")) {
    const mark = document.createElement("span");
    mark.className = "counts";
    mark.title = "the submission the leaderboard counts: the best whole submission";
    mark.textContent = "counts";
    counts.replaceChildren(mark);
  } else if (!row.counts) {
    counts.replaceChildren();
  }
}

function liveList(table) {
  let etag = null;
  async function tick() {
    let again = true;
    try {
      const got = await getJSON(table.dataset.liveUrl, etag);
      if (!got.unchanged) {
        etag = got.etag;
        for (const row of got.data.rows) {
          const tr = table.querySelector('tbody tr[data-id="' + row.id + '"]');
          if (tr) setListRow(tr, row);
        }
        table.dataset.updates = String(Number(table.dataset.updates || 0) + 1);
        if (!got.data.live) {
          again = false;
          table.dataset.live = "0";
          document.getElementById("list-live-hint")?.remove();
        }
      }
    } catch (err) {
      console.warn("submissions list update failed", err);
    }
    if (again) setTimeout(tick, Number(table.dataset.interval || 2000));
  }
  setTimeout(tick, Number(table.dataset.interval || 2000));
}

function liveBadge(badge) {
  let etag = null;
  const interval = Number(badge.dataset.interval || 5000);
  async function tick() {
    try {
      const got = await getJSON("/messages.json", etag);
      if (!got.unchanged) {
        etag = got.etag;
        const doc = got.data;
        badge.textContent = String(doc.total);
        badge.hidden = doc.total === 0;
        badge.title = doc.answers + " unread answer(s), " + doc.announcements + " unread announcement(s)";
        badge.dataset.updates = String(Number(badge.dataset.updates || 0) + 1);
        const fresh = document.getElementById("new-messages");  // on the Messages page itself
        if (fresh && doc.total > 0) fresh.hidden = false;
      }
    } catch (err) {
      console.warn("messages badge update failed", err);
    }
    setTimeout(tick, interval);
  }
  setTimeout(tick, interval);
}

// A link to a point's timeline (#tl-TASK-POINT, the "picture" links of a submission page) opens its
// collapsed <details> block, on the page's first load and on every later click (the server also renders
// it open for the links' ?open=TASK-POINT, which is how it works without this file).
function openLinkedTimeline() {
  const target = location.hash.length > 1 ? document.getElementById(location.hash.slice(1)) : null;
  if (target && target.tagName === "DETAILS") target.open = true;
}

// A link into this page (same path, a fragment naming one of its elements): open the <details> it names
// and go there without loading the page again (the "picture" links carry ?open=, a timeline's links to a
// source line come from its frame). Clicking the fragment the page is already at scrolls there again.
// Returns whether it was handled.
function followInPage(link) {
  const href = link.getAttribute("href");
  if (!href) return false;
  const url = new URL(href, location.href);
  const target = url.hash.length > 1 ? document.getElementById(decodeURIComponent(url.hash.slice(1))) : null;
  if (url.origin !== location.origin || url.pathname !== location.pathname || !target) return false;
  if (target.tagName === "DETAILS") target.open = true;
  if (location.hash === url.hash) target.scrollIntoView();
  else location.hash = url.hash;
  return true;
}

// A timeline's zoom link (1x ... 16x): the picture drawn that much wider, in its frame, which scrolls
// sideways (without this file the link opens the picture itself).
function zoomTimeline(link) {
  const item = link.closest(".timeline-item");
  const frame = item && item.querySelector("iframe.timeline-frame");
  if (!frame) return false;
  frame.src = link.href;
  frame.style.width = link.dataset.width + "px";
  frame.style.maxWidth = "none";
  frame.style.setProperty("--tl-width", link.dataset.width + "px");
  for (const other of item.querySelectorAll("a.tl-zoom")) other.removeAttribute("aria-current");
  link.setAttribute("aria-current", "true");
  return true;
}

function onLinkClick(event) {
  if (event.defaultPrevented || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
  const link = event.target.closest && event.target.closest("a[href]");
  if (link && link.classList.contains("tl-zoom") && zoomTimeline(link)) event.preventDefault();
  else if (link && followInPage(link)) event.preventDefault();
}

// The timelines are SVG documents in frames of this page (same origin): their source-line links go to this
// page's listing through followInPage too, instead of loading the page again.
function watchFrame(frame) {
  const doc = frame.contentDocument;
  if (!doc || doc.kdtWatched || doc.URL === "about:blank") return;
  doc.kdtWatched = true;
  doc.addEventListener("click", onLinkClick);
}

window.addEventListener("hashchange", openLinkedTimeline);
document.addEventListener("click", onLinkClick);
document.addEventListener("load", event => {
  if (event.target.tagName === "IFRAME") watchFrame(event.target);
}, true);

document.addEventListener("DOMContentLoaded", () => {
  openLinkedTimeline();
  for (const frame of document.querySelectorAll("iframe.timeline-frame")) watchFrame(frame);
  const clock = document.getElementById("contest-clock");
  if (clock) liveClock(clock);
  const badge = document.getElementById("msg-badge");
  if (badge) liveBadge(badge);
  const board = document.getElementById("scoreboard");
  if (board) liveScoreboard(board);
  for (const list of document.querySelectorAll("table[data-live-url]"))
    if (list.dataset.live === "1") liveList(list);
  const points = document.getElementById("points");
  if (points && points.dataset.live === "1") liveSubmission(points);
});
