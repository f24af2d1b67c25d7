# expect: SV
# message: re-exported standard-library module
"""Found while fixing issue 20: no frame and no builtins needed. torch re-exports `gc` (`torch.cuda.graphs.gc`)
and `io` (`torch.storage.io`); through `gc` the audit hook's recorder is found and told to allow every path and
forget what it saw, then `io.open` reads outside the work directory. Before the fix: no violations, CE."""
import torch


def get_kernel(task_id):
    gc = torch.cuda.graphs.gc
    for obj in gc.get_objects():
        if 'audithook.Recorder' in str(type(obj)):
            obj.events.clear()
            obj.allowed = ('/',)
    raise RuntimeError(torch.storage.io.open('/etc/hostname').read())
