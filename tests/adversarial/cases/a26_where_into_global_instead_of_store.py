# expect: {"1:0": "CE", "4:0": "CE"}
# message: write into an SPM tile first, then kdt.store
"""Issue 9's cheat: kdt.where (free) writing the result straight into the global output instead of a
store (a mask that is all true selects x everywhere)."""
import kdt


def jobs(task_args):
    return task_args["N"] // 8192


@kdt.kernel(num_jobs_calculator=jobs)
def vector_add(task_args, io_tensors):
    x0 = kdt.get_job_id() * 8192
    x = kdt.alloc_spm((8192,))
    y = kdt.alloc_spm((8192,))
    m = kdt.alloc_spm((8192,), dtype='bool', init_value=True)
    kdt.load(io_tensors["a"][x0:x0 + 8192], x)
    kdt.load(io_tensors["b"][x0:x0 + 8192], y)
    kdt.add(x, y, x)
    kdt.where(m, x, x, io_tensors["c"][x0:x0 + 8192])


def get_kernel(task_id):
    return vector_add if task_id == 1 else None
