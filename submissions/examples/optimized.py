"""Standard solutions for the four KDT contest tasks: software-pipelined kernels that reach score 100 on
every test point of judging.md.

Timing model in one paragraph (kdt-semantics.md section 4): one in-order issue unit per SM; a load/store
occupies it for one cycle and completes L_mem cycles later (any size, no unit is held, so any number of
them can be in flight); a vector/matrix instruction issues only when its unit (VXM/MXM) is free, and
every instruction also waits for the per-element write/read stamps of its operands.  Hence the recipe
used everywhere below: keep the bottleneck unit fed back to back, issue each load as soon as its buffer's
last reader has finished (so it never stalls the issue unit), place the other unit's work right after
the bottleneck instruction in program order so it runs under it, and let the stages rotate through a ring
of SPM buffers indexed by `i % S`.

Measured numbers (cycles of the last trial; utilisation = busy cycles of the unit / cycles of the job):
  task 1  N=16384       230      N=1048576  8294      (VXM 98.8 %)
  task 2  512x1024x2560 22482    2048x512x3072 51154  (MXM 91.1 % / 96.1 %)
  task 3  512x1024x2560 22611    2048x512x3072 51347  (MXM 90.6 % / 95.7 %)
  task 4  1024x128 4696   1024x2048 34898   1024x4096 67666   2048x4096 135332  (MXM 93.9 % .. 96.9 %)
"""
import kdt


# --------------------------------------------------------------------------------------------------
# Task 1: c = a + b.
# Bottleneck: VXM (N/128 cycles of adds; 8192 busy of 8294 cycles = 98.8 % for N = 2^20; lower bound
# 50 (first load) + 8192 + 50 (last store) + 2 issue cycles = 8294, so this is optimal). One job (one SM;
# more jobs would only serialise). Tiles of T = 1024 elements (8 VXM cycles, 4 issue cycles), a ring of
# NB = 16 (a, b) buffer pairs (128 KiB of SPM exactly), loads LEAD = 7 tiles ahead (7 * 8 > 50 + 2); the
# sum is written in place into the a buffer; each store is issued after the next add (not before) so the
# issue unit never waits for an add to finish.
# --------------------------------------------------------------------------------------------------
def _one_job(task_args):
    return 1


@kdt.kernel(num_jobs_calculator=_one_job)
def vector_add(task_args, io_tensors):
    T = 1024
    NB = 16
    LEAD = 7
    N = task_args['N']
    n = N // T
    a = kdt.alloc_spm((NB, T))
    b = kdt.alloc_spm((NB, T))
    for j in range(LEAD):
        if j < n:
            kdt.load(io_tensors['a'][j * T:(j + 1) * T], a[j])
            kdt.load(io_tensors['b'][j * T:(j + 1) * T], b[j])
    for i in range(n):
        kdt.add(a[i % NB], b[i % NB], a[i % NB])
        if i > 0:
            kdt.store(a[(i - 1) % NB], io_tensors['c'][(i - 1) * T:i * T])
        if i + LEAD < n:
            kdt.load(io_tensors['a'][(i + LEAD) * T:(i + LEAD + 1) * T], a[(i + LEAD) % NB])
            kdt.load(io_tensors['b'][(i + LEAD) * T:(i + LEAD + 1) * T], b[(i + LEAD) % NB])
    kdt.store(a[(n - 1) % NB], io_tensors['c'][(n - 1) * T:n * T])


# --------------------------------------------------------------------------------------------------
# Task 2: C = A @ B on 32 SMs, L_mem = 1000.
# Bottleneck: MXM. One output tile per job and exactly one job per SM, so each SM pays the 1000-cycle
# first load and the 1000-cycle final store only once: cycles = 1002 + MXM work + 1000, the lower bound
# for this job split. 512x1024x2560: 32 tiles of 128x128, MXM 20480 of 22482 cycles (91.1 %);
# 2048x512x3072: 32 tiles of 128x256, MXM 49152 of 51154 cycles (96.1 %).
# K is streamed in chunks of BK = 64 through a ring of S buffers; the load for chunk i+S-1 is issued
# right after matmul i (its buffer's last reader, matmul i-1, is then finished), (S-1) chunks ahead:
# 3 x 512 resp. 1 x 1024 cycles of MXM work cover the 1000-cycle latency.
# --------------------------------------------------------------------------------------------------
def _jobs_128x128(task_args):
    return (task_args['M'] // 128) * (task_args['N'] // 128)


def _jobs_128x256(task_args):
    return (task_args['M'] // 128) * (task_args['N'] // 256)


@kdt.kernel(num_jobs_calculator=_jobs_128x128)
def matmul_128x128(task_args, io_tensors):
    BM = 128
    BN = 128
    BK = 64
    S = 4
    nb = task_args['N'] // BN
    nk = task_args['K'] // BK
    j = kdt.get_job_id()
    m0 = (j // nb) * BM
    n0 = (j % nb) * BN
    A = io_tensors['A'][m0:m0 + BM]
    B = io_tensors['B'][:, n0:n0 + BN]
    a = kdt.alloc_spm((S, BM, BK))
    b = kdt.alloc_spm((S, BK, BN))
    c = kdt.alloc_spm((BM, BN))
    for i in range(S - 1):
        if i < nk:
            kdt.load(A[:, i * BK:(i + 1) * BK], a[i])
            kdt.load(B[i * BK:(i + 1) * BK], b[i])
    for i in range(nk):
        kdt.matmul(a[i % S], b[i % S], c, accumulate=True)
        if i + S - 1 < nk:
            kdt.load(A[:, (i + S - 1) * BK:(i + S) * BK], a[(i + S - 1) % S])
            kdt.load(B[(i + S - 1) * BK:(i + S) * BK], b[(i + S - 1) % S])
    kdt.store(c, io_tensors['C'][m0:m0 + BM, n0:n0 + BN])


@kdt.kernel(num_jobs_calculator=_jobs_128x256)
def matmul_128x256(task_args, io_tensors):
    BM = 128
    BN = 256
    BK = 64
    S = 2
    nb = task_args['N'] // BN
    nk = task_args['K'] // BK
    j = kdt.get_job_id()
    m0 = (j // nb) * BM
    n0 = (j % nb) * BN
    A = io_tensors['A'][m0:m0 + BM]
    B = io_tensors['B'][:, n0:n0 + BN]
    a = kdt.alloc_spm((S, BM, BK))
    b = kdt.alloc_spm((S, BK, BN))
    c = kdt.alloc_spm((BM, BN))
    for i in range(S - 1):
        if i < nk:
            kdt.load(A[:, i * BK:(i + 1) * BK], a[i])
            kdt.load(B[i * BK:(i + 1) * BK], b[i])
    for i in range(nk):
        kdt.matmul(a[i % S], b[i % S], c, accumulate=True)
        if i + S - 1 < nk:
            kdt.load(A[:, (i + S - 1) * BK:(i + S) * BK], a[(i + S - 1) % S])
            kdt.load(B[(i + S - 1) * BK:(i + S) * BK], b[(i + S - 1) % S])
    kdt.store(c, io_tensors['C'][m0:m0 + BM, n0:n0 + BN])


# --------------------------------------------------------------------------------------------------
# Task 3: C = (Ab * As per 64-column group) @ (Bb * Bs per 64-row group), 32 SMs, L_mem = 1000.
# Bottleneck: MXM (90.6 % / 95.7 %); the scaling runs on the VXM under the MXM (VXM 5120 of 22611
# resp. 9216 of 51347 cycles). Same job split as task 2. Per K chunk of BK = 64 (one scale group) a job
# loads the Ab/Bb chunks plus the As column / Bs row of that group, scales both chunks in place (VXM:
# 64 + 64 resp. 64 + 128 cycles) and feeds them to the MXM. Program order per step i:
# matmul(i) [waits for the MXM], loads for chunk i+S-1, scaling of chunk i+1 (runs during matmul i, which
# is 512 resp. 1024 cycles long), so the MXM never waits; loads are S-2 MXM steps ahead of their scaling.
# Only the first chunk's scaling (128 resp. 192 cycles) is exposed.
# --------------------------------------------------------------------------------------------------
@kdt.kernel(num_jobs_calculator=_jobs_128x128)
def scaled_matmul_128x128(task_args, io_tensors):
    BM = 128
    BN = 128
    BK = 64
    S = 5
    nb = task_args['N'] // BN
    nk = task_args['K'] // BK
    j = kdt.get_job_id()
    m0 = (j // nb) * BM
    n0 = (j % nb) * BN
    A = io_tensors['Ab'][m0:m0 + BM]
    AS = io_tensors['As'][m0:m0 + BM]
    B = io_tensors['Bb'][:, n0:n0 + BN]
    BS = io_tensors['Bs'][:, n0:n0 + BN]
    a = kdt.alloc_spm((S, BM, BK))
    b = kdt.alloc_spm((S, BK, BN))
    sa = kdt.alloc_spm((S, BM, 1))
    sb = kdt.alloc_spm((S, 1, BN))
    c = kdt.alloc_spm((BM, BN))
    for i in range(S - 1):
        if i < nk:
            kdt.load(A[:, i * BK:(i + 1) * BK], a[i])
            kdt.load(B[i * BK:(i + 1) * BK], b[i])
            kdt.load(AS[:, i:i + 1], sa[i])
            kdt.load(BS[i:i + 1], sb[i])
    kdt.mul(a[0], kdt.broadcast_to(sa[0], 1, BK), a[0])
    kdt.mul(b[0], kdt.broadcast_to(sb[0], 0, BK), b[0])
    for i in range(nk):
        kdt.matmul(a[i % S], b[i % S], c, accumulate=True)
        if i + S - 1 < nk:
            p = (i + S - 1) % S
            kdt.load(A[:, (i + S - 1) * BK:(i + S) * BK], a[p])
            kdt.load(B[(i + S - 1) * BK:(i + S) * BK], b[p])
            kdt.load(AS[:, i + S - 1:i + S], sa[p])
            kdt.load(BS[i + S - 1:i + S], sb[p])
        if i + 1 < nk:
            q = (i + 1) % S
            kdt.mul(a[q], kdt.broadcast_to(sa[q], 1, BK), a[q])
            kdt.mul(b[q], kdt.broadcast_to(sb[q], 0, BK), b[q])
    kdt.store(c, io_tensors['C'][m0:m0 + BM, n0:n0 + BN])


@kdt.kernel(num_jobs_calculator=_jobs_128x256)
def scaled_matmul_128x256(task_args, io_tensors):
    BM = 128
    BN = 256
    BK = 64
    S = 4
    nb = task_args['N'] // BN
    nk = task_args['K'] // BK
    j = kdt.get_job_id()
    m0 = (j // nb) * BM
    n0 = (j % nb) * BN
    A = io_tensors['Ab'][m0:m0 + BM]
    AS = io_tensors['As'][m0:m0 + BM]
    B = io_tensors['Bb'][:, n0:n0 + BN]
    BS = io_tensors['Bs'][:, n0:n0 + BN]
    a = kdt.alloc_spm((S, BM, BK))
    b = kdt.alloc_spm((S, BK, BN))
    sa = kdt.alloc_spm((S, BM, 1))
    sb = kdt.alloc_spm((S, 1, BN))
    c = kdt.alloc_spm((BM, BN))
    for i in range(S - 1):
        if i < nk:
            kdt.load(A[:, i * BK:(i + 1) * BK], a[i])
            kdt.load(B[i * BK:(i + 1) * BK], b[i])
            kdt.load(AS[:, i:i + 1], sa[i])
            kdt.load(BS[i:i + 1], sb[i])
    kdt.mul(a[0], kdt.broadcast_to(sa[0], 1, BK), a[0])
    kdt.mul(b[0], kdt.broadcast_to(sb[0], 0, BK), b[0])
    for i in range(nk):
        kdt.matmul(a[i % S], b[i % S], c, accumulate=True)
        if i + S - 1 < nk:
            p = (i + S - 1) % S
            kdt.load(A[:, (i + S - 1) * BK:(i + S) * BK], a[p])
            kdt.load(B[(i + S - 1) * BK:(i + S) * BK], b[p])
            kdt.load(AS[:, i + S - 1:i + S], sa[p])
            kdt.load(BS[i + S - 1:i + S], sb[p])
        if i + 1 < nk:
            q = (i + 1) % S
            kdt.mul(a[q], kdt.broadcast_to(sa[q], 1, BK), a[q])
            kdt.mul(b[q], kdt.broadcast_to(sb[q], 0, BK), b[q])
    kdt.store(c, io_tensors['C'][m0:m0 + BM, n0:n0 + BN])


class _TileDispatch:
    """Chooses the job's output tile by problem size (the tasks run on 32 SMs): 128x128 tiles while they
    give at most 32 jobs, else 128x256 tiles (half the jobs, same per-job overhead, fewer jobs per SM)."""

    def __init__(self, narrow, wide):
        self.narrow = narrow
        self.wide = wide

    def compile(self, task_args, io_tensors):
        M, N = task_args['M'], task_args['N']
        wide = (M // 128) * (N // 128) > 32 and N % 256 == 0
        return (self.wide if wide else self.narrow).compile(task_args, io_tensors)


# --------------------------------------------------------------------------------------------------
# Task 4: O = softmax(Q K^T) V, online softmax, one job per 128 query rows (8 SMs, L_mem = 1000).
# Bottleneck: MXM (S = Q K_j^T and O += P_j V_j, 1024 cycles each per 128-key block); 93.9 % / 96.9 % /
# 96.9 % of each job (VXM ~772 cycles per block, hidden). MXM order S_0, S_1, PV_0, S_2, PV_1, ...: the
# softmax of block j (row max, rescale factor alpha, exp, row sum) and the rescale of O by alpha run on the
# VXM while the MXM computes S_{j+1}, so PV_j finds P_j ready and the MXM never idles; K is loaded two
# blocks ahead and V one block ahead into 2-deep rings whose previous readers have already finished.
# Last block: PV goes to a spare buffer while the VXM scales O by alpha / l in parallel, leaving one
# 128-cycle fma (O = PV / l + O) after the last matmul; job = 1002 + 2048 * blocks + 128 + 1000 cycles.
# --------------------------------------------------------------------------------------------------
def _jobs_q128(task_args):
    return task_args['S_qo'] // 128


@kdt.kernel(num_jobs_calculator=_jobs_q128)
def flash_attention(task_args, io_tensors):
    BQ = 128
    BK = 128
    D = 128
    E = 2.718281828459045
    n = task_args['S_kv'] // BK
    q0 = kdt.get_job_id() * BQ
    Kg = io_tensors['K']
    Vg = io_tensors['V']
    q = kdt.alloc_spm((BQ, D))
    k = kdt.alloc_spm((2, BK, D))
    v = kdt.alloc_spm((2, BK, D))
    s = kdt.alloc_spm((2, BQ, BK))
    o = kdt.alloc_spm((BQ, D))
    m = kdt.alloc_spm((BQ,), init_value=-3.4e38)
    mt = kdt.alloc_spm((BQ,))
    mn = kdt.alloc_spm((BQ,))
    alpha = kdt.alloc_spm((BQ,))
    l = kdt.alloc_spm((BQ,))
    ls = kdt.alloc_spm((BQ,))
    rl = kdt.alloc_spm((BQ,))
    one = kdt.alloc_spm((BQ,), init_value=1.0)
    kdt.load(io_tensors['Q'][q0:q0 + BQ], q)
    kdt.load(Kg[0:BK], k[0])
    if n > 1:
        kdt.load(Kg[BK:2 * BK], k[1])
    kdt.load(Vg[0:BK], v[0])
    kdt.matmul(q, kdt.transpose(k[0], 0, 1), s[0])
    for j in range(n):
        c = j % 2
        if j + 1 < n:
            kdt.matmul(q, kdt.transpose(k[1 - c], 0, 1), s[1 - c])
            kdt.load(Vg[(j + 1) * BK:(j + 2) * BK], v[1 - c])
        if j + 2 < n:
            kdt.load(Kg[(j + 2) * BK:(j + 3) * BK], k[c])
        sc = s[c]
        kdt.reduce(sc, 1, 'max', mt)
        kdt.max(m, mt, mn)
        kdt.sub(m, mn, alpha)
        kdt.exp(alpha, alpha, E)
        kdt.sub(sc, kdt.broadcast_to(kdt.unsqueeze(mn, 1), 1, BK), sc)
        kdt.exp(sc, sc, E)
        kdt.reduce(sc, 1, 'sum', ls)
        kdt.fma(l, alpha, ls, l)
        kdt.copy(mn, m)
        if j + 1 < n:
            kdt.mul(o, kdt.broadcast_to(kdt.unsqueeze(alpha, 1), 1, D), o)
            kdt.matmul(sc, v[c], o, accumulate=True)
        else:
            kdt.div(one, l, rl)
            kdt.mul(alpha, rl, alpha)
            pv = s[1 - c]
            kdt.matmul(sc, v[c], pv)
            kdt.mul(o, kdt.broadcast_to(kdt.unsqueeze(alpha, 1), 1, D), o)
            kdt.fma(pv, kdt.broadcast_to(kdt.unsqueeze(rl, 1), 1, D), o, o)
    kdt.store(o, io_tensors['O'][q0:q0 + BQ])


_KERNELS = {
    1: vector_add,
    2: _TileDispatch(matmul_128x128, matmul_128x256),
    3: _TileDispatch(scaled_matmul_128x128, scaled_matmul_128x256),
    4: flash_attention,
}


def get_kernel(task_id: int):
    return _KERNELS.get(task_id)
