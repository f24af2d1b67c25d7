"""Simulator throughput: simulated instructions per second.

(a) instruction-bound: 1024 jobs on 4 SMs, each job 2 loads of 64 floats, 8 x (add, mul) on 64-element
    tiles, 1 store (plus the 3 fills of its allocations);
(b) the conformance flash-attention kernel (c19) scaled to S_qo=2048, S_kv=4096, D=128 on 8 SMs,
    compared with the bare numpy work of the same instructions (the floor for any simulator).

Prints one line per figure. ``--quick`` runs smaller versions (for the README's smoke command); ``--cpu``
times in CPU seconds of this process instead of the wall clock and ``--bytecodes`` also counts the Python
bytecodes one launch executes (deterministic: for before/after comparisons on a shared machine).
Run: ``.venv/bin/python benchmarks/sim_throughput.py [--quick] [--repeat N] [--cpu] [--bytecodes]``
"""
import argparse
import importlib.util
import os
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

import kdt
from timing import best_time, bytecodes

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KDT_SHARED_DIR", ROOT.parent / "shared"))


@kdt.kernel(num_jobs_calculator=lambda task_args: task_args["N"] // 64)
def add_mul_kernel(task_args, io_tensors):
    j = kdt.get_job_id()
    x = kdt.alloc_spm((64,))
    y = kdt.alloc_spm((64,))
    z = kdt.alloc_spm((64,))
    kdt.load(io_tensors["a"][j * 64:(j + 1) * 64], x)
    kdt.load(io_tensors["b"][j * 64:(j + 1) * 64], y)
    for i in range(8):
        kdt.add(x, y, z)
        kdt.mul(z, y, x)
    kdt.store(x, io_tensors["c"][j * 64:(j + 1) * 64])


def count_instructions(compiled, io, spec) -> int:
    prof = kdt.Profile()
    kdt.launch_kernel(compiled, io, spec, profile=prof)
    return sum(len(t) for t in prof.traces.values())


def bench_instruction_bound(jobs: int, repeat: int, clock=time.perf_counter, with_bytecodes=False):
    n = jobs * 64
    io = {"a": torch.randn(n), "b": torch.randn(n), "c": torch.zeros(n)}
    compiled = add_mul_kernel.compile({"N": n}, io)
    spec = kdt.TPUSpec(num_sms=4, load_store_latency=50)
    count = count_instructions(compiled, io, spec)
    cycles = kdt.launch_kernel(compiled, io, spec)
    seconds = best_time(lambda: kdt.launch_kernel(compiled, io, spec), repeat, clock)
    print(f"(a) instruction-bound: {jobs} jobs on 4 SMs, {count} instructions, {cycles} cycles: "
          f"{seconds * 1e3:.1f} ms, {count / seconds:,.0f} instructions/s"
          + _bytecodes(compiled, io, spec, with_bytecodes))
    return count / seconds


def _bytecodes(compiled, io, spec, wanted: bool) -> str:
    """``; N Python bytecodes per launch`` (``timing.bytecodes``) when ``wanted``, else nothing."""
    if not wanted:
        return ""
    return f"; {bytecodes(lambda: kdt.launch_kernel(compiled, io, spec)):,} Python bytecodes per launch"


def load_flash_attention():
    path = SHARED / "conformance" / "cases" / "c19_flash_attention_small.py"
    if not path.is_file():
        raise SystemExit(f"{path} not found: the benchmark reads ../shared next to the repository; "
                         "set KDT_SHARED_DIR=/path/to/shared")
    spec = importlib.util.spec_from_file_location("c19_flash_attention_small", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


def numpy_floor(s_qo: int, s_kv: int, d: int) -> None:
    """The same numpy operations the flash-attention kernel asks for, without any simulator."""
    f32 = np.float32
    q, k, v = (np.random.rand(s_qo, d).astype(f32), np.random.rand(s_kv, d).astype(f32),
               np.random.rand(s_kv, d).astype(f32))
    o = np.empty((s_qo, d), f32)
    for j in range(s_qo // 128):
        qb = q[j * 128:(j + 1) * 128].copy()
        m, l, acc = np.full(128, -1e30, f32), np.zeros(128, f32), np.zeros((128, d), f32)
        for i in range(s_kv // 128):
            kb, vb = k[i * 128:(i + 1) * 128].copy(), v[i * 128:(i + 1) * 128].copy()
            s = np.matmul(qb, kb.T)
            mt = np.maximum.reduce(s, axis=1)
            mn = np.maximum(m, mt)
            alpha = np.power(f32(np.e), m - mn, dtype=f32)
            p = np.power(f32(np.e), s - mn[:, None], dtype=f32)
            ls = np.add.reduce(p, axis=1)
            l = np.add(np.multiply(l, alpha), ls)
            pv = np.matmul(p, vb)
            acc = np.add(np.multiply(acc, alpha[:, None]), pv)
            m = mn.copy()
        o[j * 128:(j + 1) * 128] = acc / l[:, None]


def bench_flash_attention(s_qo: int, s_kv: int, d: int, repeat: int, clock=time.perf_counter, with_bytecodes=False):
    kernel = load_flash_attention()
    gen = torch.Generator().manual_seed(0)
    io = {"Q": (torch.randn(s_qo, d, generator=gen) / 10).clamp(-1, 1),
          "K": (torch.randn(s_kv, d, generator=gen) / 10).clamp(-1, 1),
          "V": (torch.randn(s_kv, d, generator=gen) / 10).clamp(-1, 1), "O": torch.zeros(s_qo, d)}
    compiled = kernel.compile({"S_qo": s_qo, "S_kv": s_kv, "D": d}, io)
    spec = kdt.TPUSpec(num_sms=8, load_store_latency=1000, spm_size=640 * 1024)
    count = count_instructions(compiled, io, spec)
    cycles = kdt.launch_kernel(compiled, io, spec)
    ref = torch.softmax(io["Q"] @ io["K"].T, dim=-1) @ io["V"]
    assert kdt.utils.check_is_allclose("O", io["O"], ref, 1e-5, 2e-3), "flash attention output is wrong"
    seconds = best_time(lambda: kdt.launch_kernel(compiled, io, spec), repeat, clock)
    with threadpool_limits(1, user_api="blas"):  # the simulator runs BLAS single-threaded too
        floor = best_time(lambda: numpy_floor(s_qo, s_kv, d), repeat, clock)
    print(f"(b) flash attention S_qo={s_qo} S_kv={s_kv} D={d} on 8 SMs: {count} instructions, {cycles} cycles: "
          f"{seconds * 1e3:.1f} ms, {count / seconds:,.0f} instructions/s; bare numpy work {floor * 1e3:.1f} ms, "
          f"simulator / numpy = {seconds / floor:.2f}" + _bytecodes(compiled, io, spec, with_bytecodes))
    return seconds / floor


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a few seconds in all)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure (best is printed)")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds of this process, not the wall clock")
    parser.add_argument("--bytecodes", action="store_true", help="also count the Python bytecodes of one launch")
    args = parser.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter
    torch.manual_seed(0)
    np.random.seed(0)
    if args.quick:
        bench_instruction_bound(128, 1, clock, args.bytecodes)
        bench_flash_attention(256, 512, 64, 1, clock, args.bytecodes)
    else:
        bench_instruction_bound(1024, args.repeat, clock, args.bytecodes)
        bench_flash_attention(2048, 4096, 128, args.repeat, clock, args.bytecodes)


if __name__ == "__main__":
    main()
