"""Golden module of task 4 (flash attention): O = softmax(Q K^T) V as 4 modules, fused.

`flash_attention_golden_cpu` is the judger's reference (`judger.tasks.TASKS[4].reference`). The
stage functions follow the optimized kernel's online formulation over key/value blocks of
`BLOCK_KV` = 128 keys (j = 0 .. S_kv / 128 - 1); module by module:

1. MXM `scores`:             S_j = Q K_j^T
2. VXM `online_softmax`:     m_j = max(m_{j-1}, rowmax(S_j))            running max (m_{-1} = -inf)
                             alpha_j = exp(m_{j-1} - m_j)                rescale factor
                             P_j = exp(S_j - m_j)                        unnormalised probabilities
                             l_j = alpha_j * l_{j-1} + rowsum(P_j)       rescaled denominator (l_{-1} = 0)
3. MXM `block_pv`:           PV_j = P_j V_j
4. VXM `rescale_accumulate`: acc_j = alpha_j * acc_{j-1} + PV_j          rescaled output accumulator
                             O = acc_last / l_last
In the kernel the "+ PV_j" of module 4 is the MXM's `accumulate=True` into the accumulator that the
VXM has just multiplied by alpha_j; the contract keeps the data-level split (the MXM produces PV_j,
the VXM owns the recurrence), which composes to the same O.

All three parts of the recurrence are needed: with the plain softmax update (alpha_j taken as 1:
l_j = l_{j-1} + rowsum(P_j), acc_j = acc_{j-1} + PV_j) blocks computed against an older, smaller
running max are over-weighted, and O is wrong as soon as a later block raises a row's max.
"""
import torch

from judger.tasks import get_task

BLOCK_KV = 128  # keys per block: the optimized kernel's BK


def flash_attention_golden_cpu(Q, K, V):
    O = get_task(4).reference({"Q": Q, "K": K, "V": V})
    return O


def num_blocks(S_kv: int) -> int:
    if S_kv % BLOCK_KV:
        raise ValueError(f"S_kv = {S_kv} is not a multiple of the block size {BLOCK_KV}")
    return S_kv // BLOCK_KV


def _block(j: int) -> slice:
    return slice(j * BLOCK_KV, (j + 1) * BLOCK_KV)


def scores(Q, K):
    """Module 1 (MXM): S = Q K^T, one [S_qo, 128] block S_j per key block (independent products)."""
    return torch.cat([Q @ K[_block(j)].T for j in range(num_blocks(K.shape[0]))], dim=1)


def online_softmax(S):
    """Module 2 (VXM): the online softmax statistics over the key blocks, in one pass.

    Returns P (block j holds exp(S_j - m_j), relative to the running max m_j at block j), alpha
    [S_qo, blocks] (column j = exp(m_{j-1} - m_j)) and the final denominator l [S_qo].
    """
    rows, n = S.shape[0], num_blocks(S.shape[1])
    m = torch.full((rows,), float("-inf"), dtype=S.dtype)
    l = torch.zeros(rows, dtype=S.dtype)
    P = torch.empty_like(S)
    alpha = torch.empty(rows, n, dtype=S.dtype)
    for j in range(n):
        S_j = S[:, _block(j)]
        m_new = torch.maximum(m, S_j.max(dim=1).values)
        alpha[:, j] = torch.exp(m - m_new)
        P[:, _block(j)] = torch.exp(S_j - m_new[:, None])
        l = alpha[:, j] * l + P[:, _block(j)].sum(dim=1)
        m = m_new
    return P, alpha, l


def block_pv(P, V):
    """Module 3 (MXM): PV_j = P_j V_j for every block, stacked [blocks, S_qo, D]."""
    return torch.stack([P[:, _block(j)] @ V[_block(j)] for j in range(num_blocks(V.shape[0]))])


def rescale_accumulate(PV, alpha, l):
    """Module 4 (VXM): acc_j = alpha_j * acc_{j-1} + PV_j over the blocks, then O = acc / l."""
    acc = torch.zeros(PV.shape[1:], dtype=PV.dtype)
    for j in range(PV.shape[0]):
        acc = alpha[:, j, None] * acc + PV[j]
    return acc / l[:, None]


def flash_attention_stage_1(Q, K, V):
    return scores(Q, K)


def flash_attention_stage_12(Q, K, V):
    return online_softmax(scores(Q, K))


def flash_attention_stage_123(Q, K, V):
    P, alpha, l = online_softmax(scores(Q, K))
    return block_pv(P, V)


def flash_attention_stage_1234(Q, K, V):
    P, alpha, l = online_softmax(scores(Q, K))
    return rescale_accumulate(block_pv(P, V), alpha, l)
