# expect: {"1:0": "CE", "4:0": "CE"}
# message: CPU time
"""num_jobs_calculator never returns."""
import kdt


def jobs(task_args):
    n = 0
    while True:
        n += 1

@kdt.kernel(num_jobs_calculator=jobs)
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

