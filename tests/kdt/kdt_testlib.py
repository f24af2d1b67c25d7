"""Helpers shared by the kdt test modules."""
import contextlib
import inspect
import resource


def line_of(kernel, needle: str) -> int:
    """The 1-based line, in its file, of the first source line of ``kernel`` that contains ``needle``."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return next(first + i for i, line in enumerate(lines) if needle in line)


@contextlib.contextmanager
def address_space_limit(extra_bytes):
    """Lower this process's soft RLIMIT_AS to its current size plus ``extra_bytes`` (restored after), so
    that any large allocation fails at once with MemoryError."""
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
