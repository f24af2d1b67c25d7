# expect: SV
# message: `.package`, which is the name of a denied submodule
"""Passed `kdt-grade audit` before (issue 20, the attacker review of session 28): the keys of
`torch.overrides.get_overridable_functions()` are torch's own modules, handed out as plain values the
audit cannot follow; `.package` on one is `torch.package`, whose importer runs code built at run time,
and the audit hook (a detector) was switched off that way. The OS wall held then; the audit now refuses
both steps (`torch.overrides` is a denied route, `.package` a denied name on any object)."""
import torch


def get_kernel(task_id):
    for namespace in torch.overrides.get_overridable_functions():
        if str(namespace).startswith("<module 'torch' "):
            importer = namespace.package.PackageImporter
            raise RuntimeError("LEAK " + str(importer))
    return None
