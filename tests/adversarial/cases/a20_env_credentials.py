# expect: SV
"""Reads credentials from the environment (directly and through torch.os)."""
import os
import torch
import kdt

SECRET = os.environ.get('KDT_GRADE_DATABASE_URL')
SECRET2 = torch.os.environ.get('KDT_GRADE_BROKER_URL')

@kdt.kernel(num_jobs_calculator=lambda task_args: task_args["N"] // 8192)
def vector_add(task_args, io_tensors):
    x0 = kdt.get_job_id() * 8192
    x = kdt.alloc_spm((8192,))
    y = kdt.alloc_spm((8192,))
    kdt.load(io_tensors["a"][x0:x0 + 8192], x)
    kdt.load(io_tensors["b"][x0:x0 + 8192], y)
    kdt.add(x, y, x)
    kdt.store(x, io_tensors["c"][x0:x0 + 8192])


def get_kernel(task_id):
    return vector_add if task_id == 1 else None

