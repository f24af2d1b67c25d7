"""Why a kernel takes its cycles: stall reasons, the critical path of a job and the bound of a launch,
read from a ``kdt.Profile``'s traces (spec kdt-semantics.md §4).

Every traced instruction carries what set its issue cycle, recorded by the simulator's own timing update
(``kdt.simulator.program.stall_of``): ``wait`` cycles past its in-order issue slot (the previous issuing
instruction's issue + 1) and the term of §4's maximum that won (``CAUSES``, ties broken in that order):

* ``isu``: no wait, the instruction issued in its slot;
* ``raw``: an input element was not written yet, ``waw``: an output element was still being written,
  ``war``: an output element was still being read (the gate is the instruction that last wrote or read
  that element);
* ``unit``: its VXM or MXM was busy with earlier work (the gate is the instruction occupying it).

Only instructions that hold the issue unit (memory, vector, matrix) stall it: the waits of free
instructions (``fill``, ``copy``, ``where``, ``print``) are reported but hold nothing up, so the stall
cycles of a job are the gaps between its consecutive issue cycles, exactly. All cycles are job-relative.
"""
from collections import Counter

CAUSES = ("isu", "raw", "waw", "war", "unit")


def has_reasons(raw: list) -> bool:
    """Whether every entry of a job's raw trace carries its stall reason (``cause, wait, gate``: spec §4's
    maximum, ``wait`` in cycles); a trace stored before reasons existed has 5 fields per entry: ``op,
    issue, finish, unit, line``."""
    return all(len(entry) == 8 for entry in raw)


def stalls(raw: list) -> list[dict]:
    """One dict per executed instruction of a job's raw trace: ``index``, ``op``, ``line``, ``unit``,
    ``issue``/``finish`` (cycles), ``cause``, ``wait`` (cycles), ``holds_issue`` and ``gate`` (the
    instruction waited for: ``index``, ``op``, ``line``, ``finish``; None for a job's first issue).
    An entry without its reason (a stored trace older than reasons) has ``cause``, ``wait`` and ``gate``
    None."""
    out = []
    for i, entry in enumerate(raw):
        op, issue, finish, unit, line, cause, wait, gate = entry if len(entry) == 8 else (*entry, None, None, None)
        g = raw[gate] if gate is not None else None
        out.append({"index": i, "op": op, "line": line, "unit": unit, "issue": issue, "finish": finish,
                    "cause": cause, "wait": wait, "holds_issue": unit != "FREE",
                    "gate": None if g is None else {"index": gate, "op": g[0], "line": g[4], "finish": g[2]}})
    return out


def stall_cycles(raw: list) -> dict:
    """Cycles the issue unit waited, by cause (``CAUSES`` but ``isu``), over the instructions that hold it.
    Entries without stall reasons (a trace stored before they existed) count nothing."""
    total = dict.fromkeys(CAUSES[1:], 0)
    for entry in raw:
        if len(entry) == 8 and entry[3] != "FREE" and entry[6]:
            total[entry[5]] += entry[6]
    return total


def critical_path(raw: list) -> list[dict]:
    """The chain of gating instructions from the job's last finish back to its start, in program order.

    Each link is ``index``, ``op``, ``line``, ``issue``, ``finish``, ``cause`` (why it issued when it
    did), ``via`` and ``cycles``: a link the next one waited for through its finish (a dependency or a
    busy unit; the last link too) accounts for its latency, ``finish - issue``; one the next waited for
    through the issue unit (``via`` = ``issue``) for the one cycle it held it. A first link ``start``
    accounts for the cycles before the first issue. The links' cycles add up to the job's cycles.
    Empty for a trace without stall reasons (``has_reasons``)."""
    if not raw or not has_reasons(raw):
        return []
    i = max(range(len(raw)), key=lambda k: (raw[k][2], -k))
    links, via = [], "finish"
    while i is not None:
        op, issue, finish, unit, line, cause, wait, gate = raw[i]
        links.append({"index": i, "op": op, "line": line, "issue": issue, "finish": finish, "cause": cause,
                      "via": via, "cycles": finish - issue if via == "finish" else 1})
        if gate is None:
            links.append({"index": None, "op": "start", "line": None, "issue": 0, "finish": issue,
                          "cause": None, "via": "start", "cycles": issue})
        via = "issue" if cause == "isu" else "finish"
        i = gate
    return links[::-1]


def unit_busy(raw: list) -> dict:
    """Busy cycles of one job's units: ``VXM``/``MXM`` the sum of their latencies, ``ISU`` one cycle per
    instruction that holds the issue unit."""
    busy = {"ISU": 0, "VXM": 0, "MXM": 0}
    for _, issue, finish, unit, *_ in raw:
        if unit in ("VXM", "MXM"):
            busy[unit] += finish - issue
        if unit != "FREE":
            busy["ISU"] += 1
    return busy


def bound(raws: dict, runs: list) -> dict:
    """The launch's lower bound given its job placement: for each unit, the busy cycles it needs on the
    busiest SM (the jobs of one SM run one after another), and the largest of them (``cycles``): no
    schedule of these instructions on this placement finishes faster. ``complete`` is False when some
    job was not traced (its busy cycles are then missing from the sums)."""
    per_sm: dict = {}
    for run in runs:
        busy = unit_busy(raws.get(run.job, ()))
        sm = per_sm.setdefault(run.sm, Counter())
        sm.update(busy)
    units = {u: max((c[u] for c in per_sm.values()), default=0) for u in ("ISU", "VXM", "MXM")}
    unit = max(units, key=lambda u: units[u])
    return {"units": units, "unit": unit, "cycles": units[unit],
            "complete": all(run.job in raws for run in runs)}


def top_lines(raws: dict, n: int = 5) -> dict:
    """Source lines ranked by the stall cycles they ``caused`` (as the gate of a waiting instruction) and
    ``suffered`` (as the waiting instruction), over the traced jobs. Each entry: ``line``, ``ops`` (the
    instructions on it), ``cycles``, ``causes`` (cycles by cause), ``other`` (the lines on the other
    side: the waiting lines of a cause, the gating lines of a sufferer) and ``by_cause`` (per cause, its
    ``cycles`` and the ``lines`` on the other side through that cause), largest first. Entries without
    stall reasons count nothing."""
    sides = {"caused": {}, "suffered": {}}
    for raw in raws.values():
        for op, _, _, unit, line, cause, wait, gate in (e for e in raw if len(e) == 8):
            if unit == "FREE" or not wait:
                continue
            g = raw[gate] if gate is not None else None
            _add(sides["suffered"], line, op, cause, wait, g[4] if g else None)
            if g is not None:
                _add(sides["caused"], g[4], g[0], cause, wait, line)
    return {side: [_entry(line, e) for line, e in sorted(lines.items(), key=lambda kv: -kv[1]["cycles"])[:n]]
            for side, lines in sides.items()}


def _add(lines: dict, line, op, cause, wait, other) -> None:
    e = lines.setdefault(line, {"ops": Counter(), "cycles": 0, "causes": Counter(), "other": Counter(),
                                "pairs": Counter()})
    e["ops"][op] += 1
    e["cycles"] += wait
    e["causes"][cause] += wait
    if other is not None:
        e["other"][other] += wait
        e["pairs"][cause, other] += wait


def _entry(line, e) -> dict:
    by_cause = [{"cause": cause, "cycles": cycles,
                 "lines": [ln for (c, ln), _ in e["pairs"].most_common() if c == cause][:3]}
                for cause, cycles in e["causes"].most_common()]
    return {"line": line, "ops": sorted(e["ops"], key=lambda o: -e["ops"][o]), "cycles": e["cycles"],
            "causes": dict(e["causes"].most_common()), "other": [ln for ln, _ in e["other"].most_common(3)],
            "by_cause": by_cause}
