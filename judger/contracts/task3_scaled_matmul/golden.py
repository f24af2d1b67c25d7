"""Golden module of task 3 (matmul with fine-grain scales): 2 modules, fused (VXM then MXM).

    C = (Ab * As.repeat_interleave(64, 1)) @ (Bb * Bs.repeat_interleave(64, 0))

`scaled_matmul_golden_cpu` is the judger's reference (`judger.tasks.TASKS[3].reference`). The stage
functions write the same computation the way the kernel does it, per scale group of
`SCALE_BLOCK` = 64 along K (one group = one K chunk of the optimized kernel):
- module 1 (VXM) `scale`: A[:, g] = Ab[:, g] * As[:, g] (the scale column broadcast over the 64 columns
  of group g) and B[g, :] = Bb[g, :] * Bs[g, :] (the scale row broadcast over the group's 64 rows);
- module 2 (MXM) `matmul_accumulate`: C = sum over the groups of A[:, g] @ B[g, :].
"""
import torch

from judger.tasks import SCALE_BLOCK, get_task


def scaled_matmul_golden_cpu(Ab, As, Bb, Bs):
    C = get_task(3).reference({"Ab": Ab, "As": As, "Bb": Bb, "Bs": Bs})
    return C


def scale(Ab, As, Bb, Bs):
    """Module 1 (VXM): multiply every K group of Ab by its scale column and of Bb by its scale row."""
    M, K = Ab.shape
    N = Bb.shape[1]
    groups = K // SCALE_BLOCK
    A = (Ab.reshape(M, groups, SCALE_BLOCK) * As.unsqueeze(2)).reshape(M, K)
    B = (Bb.reshape(groups, SCALE_BLOCK, N) * Bs.unsqueeze(1)).reshape(K, N)
    return A, B


def matmul_accumulate(A, B):
    """Module 2 (MXM): C = sum over the K groups of A[:, g] @ B[g, :], accumulated in place."""
    C = torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype)
    for k0 in range(0, A.shape[1], SCALE_BLOCK):
        C += A[:, k0:k0 + SCALE_BLOCK] @ B[k0:k0 + SCALE_BLOCK]
    return C


def scaled_matmul_stage_1(Ab, As, Bb, Bs):
    return scale(Ab, As, Bb, Bs)


def scaled_matmul_stage_12(Ab, As, Bb, Bs):
    A, B = scale(Ab, As, Bb, Bs)
    return matmul_accumulate(A, B)
