# expect: SV
# message: introspection
"""Reaches the builtins through a generator's frame, then tries to switch the audit hook off by walking the
judge's frames, and to read the grader's environment (found in review)."""
import kdt


def _b():
    g = (i for i in [0])
    return g.gi_frame.f_builtins


B = _b()


def get_kernel(task_id):
    imp = B['__import__']
    os_ = imp('os')
    raise RuntimeError(B['open']('/proc/%d/environ' % os_.getppid(), 'rb').read().decode())
