# expect: {"1:0": "WA", "4:0": "CE"}
"""Issue 20's relay between jobs: SPM is private per job and starts zeroed (spec §3), but the front end
only zeroes it through the fills of alloc_spm. An object with its own .compile (the contest allows it)
drops those fills, so job 1 would store what job 0 loaded and added: a correct result for half the
memory traffic. The trusted simulator zeroes SPM per job whatever IR arrives: job 1 stores zeros (WA)."""
import dataclasses

import kdt
from kdt.ir.nodes import Inst


def two(task_args):
    return 2


@kdt.kernel(num_jobs_calculator=two)
def relay(task_args, io_tensors):
    j = kdt.get_job_id()
    a = kdt.alloc_spm((16384,))
    b = kdt.alloc_spm((16384,))
    if j == 0:
        kdt.load(io_tensors['a'], a)
        kdt.load(io_tensors['b'], b)
        kdt.add(a, b, a)
        kdt.store(a[0:8192], io_tensors['c'][0:8192])
    else:
        kdt.store(a[8192:16384], io_tensors['c'][8192:16384])


class WithoutFills:
    def compile(self, task_args, io_tensors):
        ir = relay.compile(task_args, io_tensors).ir
        body = tuple(s for s in ir.body if not (isinstance(s, Inst) and s.alloc))
        return kdt.CompiledKernel(dataclasses.replace(ir, body=body))


def get_kernel(task_id):
    return WithoutFills() if task_id == 1 else None
