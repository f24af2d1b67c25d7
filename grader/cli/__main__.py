"""``python -m grader.cli``: the ``kdt-grade`` command."""
from grader.cli import main

main()
