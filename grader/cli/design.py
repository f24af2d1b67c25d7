"""`kdt-grade design ...`: the click commands over design contracts.

    kdt-grade design validate FILE [--json] [--strict] [--golden GOLDEN.py] [--task N]
                                                    exit 0 PASS / 1 FAIL: rules 0-7 (PyPTO-Gym),
                                                    and the extra checks' warnings with --strict
    kdt-grade design validate --self-test [--json]  exit 0 when every built-in case behaves
    kdt-grade design gen GOLDEN.py --op NAME [--modules N]   YAML on stdout, diagnostics on stderr
    kdt-grade design verify FILE --golden GOLDEN.py [--json] exit 0 when every case passes
    kdt-grade design check FILE --kernel SUBMISSION.py --task N [--point I] [--trace-jobs J] [--json]
                                                    exit 0 PASS / 1 FAIL (contract vs the kernel's units)

torch is imported only by `verify` and `check`, so the other commands stay fast.
"""
from __future__ import annotations

import json

import click

from grader.design.contract import ValidationReport, validate_file
from grader.design.extra_checks import CHECK_IDS
from grader.design.generate import GenerateError, generate_from_file
from grader.design.selftest import run_self_test

__all__ = ["design"]


@click.group()
def design() -> None:
    """Kernel design contracts (module_interfaces.yaml): validate, generate, verify, check."""


def _run_self_test(as_json: bool) -> None:
    results = run_self_test()
    passed = all(r.ok for r in results)
    if as_json:
        cases = [{"case": r.case.name, "spelling": r.spelling, "expect": list(r.case.expect),
                  "status": r.status, "strict_status": r.strict_status, "rules": sorted(r.rules),
                  "warnings": sorted(r.warnings), "ok": r.ok} for r in results]
        click.echo(json.dumps({"status": "PASS" if passed else "FAIL", "cases": cases}))
    else:
        for r in results:
            expect = ",".join(r.case.expect) or "clean PASS"
            got = ",".join(sorted(r.rules) + [f"warning {w}" for w in sorted(r.warnings)]) or "clean"
            click.echo(f"{'PASS' if r.ok else 'FAIL'}  {r.name}  (expect {expect}; got {r.status}/"
                       f"{r.strict_status} strict, {got})")
        failed = sum(not r.ok for r in results)
        click.echo(f"self-test: {len(results) - failed}/{len(results)} cases behave")
    if not passed:
        raise SystemExit(1)


def _summary(report: ValidationReport) -> str:
    """The last line of `validate`'s text output: both rule sets and their verdicts."""
    rules = f"FAIL on {', '.join(sorted(report.rules))}" if report.rules else "PASS"
    ids = sorted(report.warning_ids, key=CHECK_IDS.index)
    if "rule0" in report.rules:
        extra = "not run (rule0 stops validation)"
    elif not ids:
        extra = "no warnings"
    elif report.strict:
        extra = f"FAIL on {', '.join(ids)} (--strict)"
    else:
        extra = f"{len(report.warnings)} warning(s) on {', '.join(ids)} (fail only with --strict)"
    return f"rules 0-7 (PyPTO-Gym): {rules}; extra checks: {extra}"


@design.command()
@click.argument("file", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--strict", is_flag=True, help="Fail on the extra checks' warnings too.")
@click.option("--golden", type=click.Path(dir_okay=False), default=None,
              help="Also check the golden file (read, never imported): golden and stage functions exist.")
@click.option("--task", "task_id", type=int, default=None,
              help="Also check the contract against judged task N (inputs, output, shapes, dtypes).")
@click.option("--self-test", is_flag=True, help="Run the built-in cases for every rule and check instead.")
def validate(file: str | None, as_json: bool, strict: bool, golden: str | None, task_id: int | None,
             self_test: bool) -> None:
    """Validate a design contract FILE: PyPTO-Gym's rule0..rule7 decide PASS/FAIL; our extra
    checks are warnings (failing with --strict)."""
    if self_test:
        if file:
            raise click.UsageError("--self-test takes no FILE")
        _run_self_test(as_json)
        return
    if not file:
        raise click.UsageError("missing FILE (or use --self-test)")
    report = validate_file(file, strict=strict, golden=golden, task=task_id)
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    else:
        click.echo(report.status)
        for violation in report.violations:
            click.echo(str(violation))
        for warning in report.warnings:
            click.echo(f"warning {warning}")
        click.echo(_summary(report))
    if report.failures:
        raise SystemExit(1)


@design.command()
@click.argument("golden")
@click.option("--op", required=True, help="Op name: finds <op>_golden_cpu / <op>_golden.")
@click.option("--modules", type=int, default=None,
              help="Number of modules (default: the chain of <op>_stage_* functions in GOLDEN).")
def gen(golden: str, op: str, modules: int | None) -> None:
    """Print a skeleton contract for GOLDEN.py on stdout; diagnostics go to stderr."""
    try:
        skeleton = generate_from_file(golden, op, modules)
    except GenerateError as exc:
        click.echo(f"design gen: error: {exc}", err=True)
        raise SystemExit(1)
    text = skeleton.yaml_text  # rendered fully before anything reaches stdout
    for line in skeleton.diagnostics:
        click.echo(f"design gen: {line}", err=True)
    click.echo(text, nl=False)


def _print_verification(report) -> None:
    for case in report.cases:
        status = "PASS" if case.passed else "FAIL"
        dims = " ".join(f"{k}={v}" for k, v in case.dims.items())
        err = "n/a" if case.max_abs_error is None else f"{case.max_abs_error:.3e}"
        line = f"{status}  seed={case.seed} {dims}  matched={case.matched_ratio:.2%}  max_abs_err={err}"
        click.echo(line + (f"  ({case.error})" if case.error else ""))
    passed = sum(c.passed for c in report.cases)
    click.echo(f"{report.status}: {report.op}: {passed}/{len(report.cases)} cases pass")


@design.command()
@click.argument("file")
@click.option("--golden", required=True, help="The golden module with the golden and stage functions.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(file: str, golden: str, as_json: bool) -> None:
    """Run FILE's composition verification: stage functions composed vs the golden."""
    from grader.design.verify import VerifyError, verify_file  # imports torch

    try:
        report = verify_file(file, golden)
    except VerifyError as exc:
        if as_json:
            click.echo(json.dumps({"status": "FAIL", "error": str(exc), "cases": []}))
        else:
            click.echo(f"FAIL\n{exc}")
        raise SystemExit(1)
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    else:
        _print_verification(report)
    if not report.passed:
        raise SystemExit(1)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _print_check(report) -> None:
    click.echo(report.status)
    if report.kernel_cycles is not None or report.task_name:
        args = " ".join(f"{k}={v}" for k, v in report.task_args.items())
        click.echo(f"contract {report.contract} (op {report.op}) vs {report.kernel}: task {report.task} "
                   f"({report.task_name}), test point {report.point} ({args})")
    if report.kernel_cycles is not None:
        traced = ("all jobs traced" if report.traced_jobs == report.jobs
                  else f"jobs 0..{report.traced_jobs - 1} of {report.jobs} traced")
        click.echo(f"kernel cycles: {report.kernel_cycles}  ({_count(report.jobs, 'job')} on "
                   f"{_count(report.num_sms, 'SM')}; {traced})")
        click.echo(f"{'unit':<5} {'used':<5} {'busy_cycles':>12} {'utilisation':>12} {'instructions':>13}  contract")
        for unit, row in report.units.items():
            if unit in ("MXM", "VXM"):
                section = "cube" if unit == "MXM" else "vector"
                claim = (f"{section}: module(s) {', '.join(map(str, row.modules))}" if row.modules
                         else f"no {section} module")
                used = "yes" if row.used else "no"
            else:
                claim, used = "", ""
            count = "-" if row.instructions is None else str(row.instructions)
            click.echo(f"{unit:<5} {used:<5} {row.busy_cycles:>12} {_percent(row.utilisation):>12} "
                       f"{count:>13}  {claim}".rstrip())
        units = " + ".join(report.used_units) or "no compute unit"
        fused = "fused" if report.used_units == ["MXM", "VXM"] else "not fused"
        click.echo(f"is_fusion: declared {str(report.is_fusion).lower()}; the kernel uses {units} ({fused})")
        spm = f"SPM: {report.spm_bytes / 1024:g} KiB of {report.spm_size / 1024:g} KiB"
        peak = (f"; MXM at {_percent(report.mxm_peak_utilisation)} of peak (the judge's figure)"
                if report.mxm_peak_utilisation is not None else "")
        click.echo(spm + peak)
        click.echo("output: " + ("matches the reference (trial 1)" if report.output_correct
                                 else "DIFFERS from the reference (trial 1; informational, not a contract rule)"))
    for violation in report.violations:
        click.echo(str(violation))


@design.command()
@click.argument("file")
@click.option("--kernel", "kernel_path", required=True, help="The submission file (defines get_kernel).")
@click.option("--task", "task_id", required=True, type=int, help="Task id (1-4) to compile the kernel for.")
@click.option("--point", default=0, show_default=True, type=int, help="Test point (default: the first).")
@click.option("--trace-jobs", type=int, default=None,
              help="Trace only jobs 0..J-1 (default: every job; faster on big points, sees fewer jobs).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check(file: str, kernel_path: str, task_id: int, point: int, trace_jobs: int | None, as_json: bool) -> None:
    """Check FILE against a kernel: the units it really uses (MXM, VXM) vs the sections and is_fusion.

    The submission is imported without a sandbox: use it on files you trust (your own, the examples).
    """
    from grader.design.check import check_file  # imports torch and the judger

    try:
        report = check_file(file, kernel_path, task_id, point=point, trace_jobs=trace_jobs)
    except ValueError as exc:
        raise click.UsageError(str(exc))
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    else:
        _print_check(report)
    if not report.passed:
        raise SystemExit(1)
