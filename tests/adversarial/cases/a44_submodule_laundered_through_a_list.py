# expect: SV
# message: the module `torch.nn` is used as a value
"""Passed `kdt-grade audit` before (issue 20, the audit's laundering check): a submodule reached as an
attribute (`torch.nn`, which leads to no denied route) could be laundered through a list or a call, and
then the private names below it were out of the audit's sight: `.modules.module.torch` is torch itself,
and its `_import_dotted_name` imports and reads any module named by a run-time string."""
import torch


def get_kernel(task_id):
    imp = (lambda m: m)([torch.nn][0]).modules.module.torch._import_dotted_name
    for obj in imp("g" + "c").get_objects():
        if "audithook.Recorder" in str(type(obj)):
            obj.events.clear()
            obj.allowed = ("/",)
    raise RuntimeError("LEAK " + imp("bui" + "ltins.op" + "en")("/etc/passwd").read()[:200])
