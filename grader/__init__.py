"""kdt-grade's grading service: intake, audit, sandboxed runs, orchestration and the `kdt-grade` CLI."""
