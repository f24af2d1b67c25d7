# expect: {"1:0": "CE", "4:0": "CE"}
# message: load it into an SPM tile first
"""Issue 9's cheat: vector add straight on the global tensors, no load and no store (the contest's judge
refused it: every compute instruction takes SPM tiles only). It once scored 10/10 for free."""
import kdt


def one(task_args):
    return 1


@kdt.kernel(num_jobs_calculator=one)
def vadd(task_args, io_tensors):
    kdt.add(io_tensors['a'], io_tensors['b'], io_tensors['c'])


def get_kernel(task_id):
    return vadd if task_id == 1 else None
