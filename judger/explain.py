"""``--explain``: why a test point takes its cycles, in a few terminal lines (``kdt.Profile.explain``).

    explanation(profile) -> dict           # the JSON form (``--json``)
    format_explanation(expl) -> [str]       # the lines printed under the test point
    legend_lines() -> [str]                 # the words they use, printed once after them

Cycles are the simulator's (spec kdt-semantics.md §4); the causes are ``kdt.simulator.explain``'s.
"""
from collections import Counter

import kdt

# what the waiting line does, for one line and for several
CAUSE_TEXT = {"raw": ("waits for its input to be written", "wait for their inputs to be written"),
              "waw": ("waits for its output to be written", "wait for their outputs to be written"),
              "war": ("waits for its output to be read", "wait for their outputs to be read"),
              "unit": ("waits for the busy unit", "wait for the busy unit")}


def profile_for_explain() -> kdt.Profile:
    """Every job traced: the bound needs every job's busy cycles."""
    return kdt.Profile()


def explanation(profile: kdt.Profile) -> dict | None:
    """``profile.explain()`` plus the critical path of job 0 grouped by source line (``path_lines``:
    ``line``, ``ops``, ``cycles``, ``share`` of the job's cycles), ``job_cycles`` (job 0's) and
    ``traced_jobs`` (how many jobs the stall cycles and top lines are summed over), or None when nothing ran."""
    if not profile.runs or not profile.is_traced(0):
        return None
    expl = profile.explain(job=0)
    job_cycles = profile.runs[0].cycles
    per_line, ops = Counter(), {}
    for link in expl["critical_path"]:
        if link["line"] is not None:
            per_line[link["line"]] += link["cycles"]
            ops.setdefault(link["line"], []).append(link["op"])
    expl["job_cycles"] = job_cycles
    expl["traced_jobs"] = len(profile.traces)
    expl["path_lines"] = [{"line": line, "ops": sorted(set(ops[line])), "cycles": c,
                           "share": c / job_cycles if job_cycles else 0.0}
                          for line, c in per_line.most_common()]
    return expl


def format_explanation(expl: dict | None, top: int = 3) -> list:
    """The indented lines printed under a test point: cycles against the bound and the utilisation, the
    lines of job 0's critical path, the stall cycles by cause and the lines that make others wait."""
    if expl is None:
        return ["    why: nothing was simulated"]
    b = expl["bound"]
    util = ", ".join(f"{u} {100 * v:.1f}%" for u, v in sorted(expl["utilisation"].items(), key=lambda kv: -kv[1]))
    ratio = f" = {expl['kernel_cycles'] / b['cycles']:.2f}x the bound" if b["cycles"] else ""
    lines = [f"    why: {expl['kernel_cycles']:,} cycles; bound {b['cycles']:,} ({b['unit']} busy cycles on the "
             f"busiest SM){ratio}; utilisation {util}"]
    path = expl["path_lines"][:top]
    if path:
        whole = (f"{expl['job_cycles']:,} cycles" if expl["job_cycles"] == expl["kernel_cycles"] else
                 f"{expl['job_cycles']:,} of the launch's {expl['kernel_cycles']:,} cycles: an SM runs its jobs "
                 "one after another")
        lines.append(f"    critical path of job 0 ({whole}): " + ", ".join(
            f"line {p['line']} {'/'.join(p['ops'])} {100 * p['share']:.1f}%" for p in path))
    stalls = {c: n for c, n in expl["stall_cycles"].items() if n}
    jobs = expl.get("traced_jobs", 1)
    over = f", summed over the {jobs:,} jobs" if jobs > 1 else ""
    if stalls:
        lines.append(f"    stall cycles of the issue unit{over}: " + ", ".join(
            f"{c} {n:,}" for c, n in sorted(stalls.items(), key=lambda kv: -kv[1])))
    for e in expl["top_lines"]["caused"][:top]:
        lines.append(f"    line {e['line']} ({'/'.join(e['ops'])}) holds up others {e['cycles']:,} cycles{over}: "
                     + "; ".join(_waiting(b) for b in e["by_cause"]))
    return lines


def _waiting(by_cause: dict) -> str:
    """``line 53 waits for its output to be read (war 589,536)``: the lines one cause holds up."""
    many = len(by_cause["lines"]) > 1
    waiting = ("lines " if many else "line ") + ", ".join(str(ln) for ln in by_cause["lines"])
    return f"{waiting} {CAUSE_TEXT[by_cause['cause']][many]} ({by_cause['cause']} {by_cause['cycles']:,})"


# Printed once under the explanations (``--explain``): the words they use.
LEGEND = ("why: cycles are the simulated KDT-TPU's; bound = the busy cycles of the busiest unit on the busiest "
          "SM, which no schedule of these instructions beats; ISU = the issue unit (one instruction a cycle, in "
          "order); a stall is a cycle it waits: raw = for an input still being written, war = for its output "
          "buffer still being read, waw = for its output still being written, unit = for a busy VXM/MXM; "
          "'holds up others' counts the waits a line causes; the critical path is the chain of waits from "
          "job 0's last finish back to its start")


def legend_lines(width: int = 110) -> list:
    """``LEGEND`` wrapped to ``width`` columns."""
    import textwrap

    return textwrap.wrap(LEGEND, width)
