"""The timing stamps of ``kdt.simulator.memory`` (spec kdt-semantics.md §4) against a plain per-element
model: any sequence of stamp writes and maxima over full, contiguous, strided, broadcast and empty views
gives exactly the per-element answers (the maximum, and the first element holding a stamp, which names
the gate of a stall), whichever representation (uniform, segments, array) the stamps
are in at the time."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kdt.simulator import memory
from kdt.simulator.memory import RV, StorageRT, element_with_stamp, stamp_max, stamp_set

N = 48


def views():
    """(offset, sizes, strides) of views inside a 48-element storage, of every layout kind."""
    full = st.just((0, (N,), (1,)))
    full_2d = st.just((0, (6, 8), (8, 1)))
    rng = st.integers(0, N - 1).flatmap(lambda lo: st.integers(1, N - lo).map(lambda n: (lo, (n,), (1,))))
    stage = st.integers(0, 5).map(lambda i: (8 * i, (2, 4), (4, 1)))  # ring-buffer stages a[i] of a (6, 8)
    half_stage = st.integers(0, 11).map(lambda i: (4 * i, (4,), (1,)))
    strided = st.integers(0, 7).map(lambda c: (c, (6,), (8,)))  # a column of (6, 8)
    block = st.tuples(st.integers(0, 4), st.integers(0, 5)).map(lambda rc: (rc[0] * 8 + rc[1], (2, 3), (8, 1)))
    bcast = st.integers(0, N - 1).map(lambda o: (o, (3, 1), (0, 1)))
    reverse = st.just((N - 1, (N,), (-1,)))
    empty = st.just((5, (0, 4), (4, 1)))
    return st.one_of(full, full_2d, rng, stage, half_stage, strided, block, bcast, reverse, empty)


def element_set(off, sizes, strides) -> list:
    if 0 in sizes:
        return []
    idx = np.full(sizes, off)
    for d, (sz, stp) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[d] = sz
        idx = idx + (np.arange(sz) * stp).reshape(shape)
    return sorted(set(idx.reshape(-1).tolist()))


@settings(max_examples=400, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), views(), st.integers(0, 50)), min_size=1, max_size=60),
       max_segs=st.sampled_from([2, 64]))
def test_stamps_equal_a_per_element_model(ops, max_segs):
    old = memory._MAX_SEGS
    memory._MAX_SEGS = max_segs
    try:
        storage = StorageRT(0, "spm", "t", "float32", np.zeros(N, dtype=np.float32))
        model = [0] * N
        clock = 0
        cache = {}
        for is_write, (off, sizes, strides), dt in ops:
            key = (off, sizes, strides)
            rv = cache.get(key) or cache.setdefault(key, RV(storage, off, sizes, strides))
            elems = element_set(off, sizes, strides)
            want = max((model[e] for e in elems), default=0)
            assert stamp_max(rv, storage.w) == want, (ops, key)
            for t in {want, clock, 0}:  # the element a stall explanation names: the first with that stamp
                first = next((e for e in elems if model[e] == t), None)
                assert element_with_stamp(rv, storage.w, t) == first, (ops, key, t)
            if is_write:
                clock += dt + 1
                stamp_set(rv, storage.w, clock)
                for e in elems:
                    model[e] = clock
        whole = RV(storage, 0, (N,), (1,))
        assert stamp_max(whole, storage.w) == max(model)
        for e in range(N):
            assert stamp_max(RV(storage, e, (1,), (1,)), storage.w) == model[e]
    finally:
        memory._MAX_SEGS = old


def test_ring_buffer_stages_stay_segments_and_a_strided_write_makes_an_array():
    storage = StorageRT(0, "spm", "t", "float32", np.zeros(N, dtype=np.float32))
    stages = [RV(storage, 8 * i, (2, 4), (4, 1)) for i in range(6)]
    for t, rv in enumerate(stages * 3, 1):
        stamp_set(rv, storage.w, t)
    assert storage.w.a is None and storage.w.segs == {(8 * i, 8 * i + 8): 12 + i + 1 for i in range(6)}
    assert stamp_max(RV(storage, 4, (8,), (1,)), storage.w) == 14  # across stages 0 and 1 (13, 14)
    stamp_set(RV(storage, 0, (N,), (1,)), storage.w, 99)
    assert storage.w.u == 99 and storage.w.segs is None
    stamp_set(stages[2], storage.w, 100)
    stamp_set(RV(storage, 1, (6,), (8,)), storage.w, 101)  # a column: per-element array
    assert storage.w.segs is None and storage.w.a is not None
    assert stamp_max(stages[2], storage.w) == 101 and stamp_max(stages[3], storage.w) == 101
    assert stamp_max(RV(storage, 16, (1,), (1,)), storage.w) == 100
    assert stamp_max(RV(storage, 0, (1,), (1,)), storage.w) == 99
