# expect: {"1:0": "CE", "4:0": "CE"}
"""Issue 9's cheat: flash attention with kdt.matmul run straight on the global Q, K and V (no loads, no
SPM limit on the operands). Task 1 is not attempted; tests/adversarial/test_memory_space_cheats.py checks
that task 4's message names the operand and the fix."""
import kdt


def attention_jobs(task_args):
    return task_args['S_qo'] // 128


@kdt.kernel(num_jobs_calculator=attention_jobs)
def attention(task_args, io_tensors):
    D = task_args['D']
    S_kv = task_args['S_kv']
    q0 = kdt.get_job_id() * 128
    s = kdt.alloc_spm((128, 128))
    o = kdt.alloc_spm((128, 128))
    kdt.matmul(io_tensors['Q'][q0:q0 + 128, 0:D], kdt.transpose(io_tensors['K'][0:128, 0:D], 0, 1), s)
    kdt.matmul(s, io_tensors['V'][0:128, 0:D], o)
    kdt.store(o, io_tensors['O'][q0:q0 + 128, 0:D])


def get_kernel(task_id):
    return attention if task_id == 4 else None
