"""Storages, resolved views and the per-element timing stamps of spec kdt-semantics.md §4.

Every storage keeps, for each element, the finish cycle of its last writer (``w``) and last reader
(``r``). Two tricks keep this cheap without changing a single cycle:

* **Epochs.** Stamps are absolute: job ``j`` runs with a base ``B`` larger than every stamp written by
  earlier jobs and issues from ``B + 1``, so old stamps can never win a ``max`` and nothing has to be
  reset between jobs (the spec's per-job reset to 0 is implied).
* **Uniform stamps.** While every element of a storage carries the same stamp, it is kept as one int
  (``Stamps.u``). Timing only needs the *set* of elements a view touches, so broadcast (stride 0)
  and size-1 dimensions are ignored and a view whose set is the whole storage counts as full.
* **Segments.** While every partial write has been a contiguous range that either equals or misses
  every range written before (the stage buffers of a pipelined kernel, ``a[i % S]``), the stamps are a
  dict of disjoint ranges ``(lo, hi) -> stamp`` over a common stamp for the other elements
  (``Stamps.segs``, ``Stamps.sbase``): a stamp update or look-up is a dict operation.
* **Per-element arrays.** Otherwise (a strided write, a range overlapping another in part, too many
  ranges) the int64 array of every element's stamp is materialised (``Stamps.a``).
"""
import numpy as np

from .errors import OutOfBoundsError, ShapeError
from .errors import ValueError as LaunchValueError

_ITEMSIZE = {"float32": 4, "bool": 1}
_NP_DTYPE = {"float32": np.float32, "bool": np.bool_}

# How a view's element set lies in its storage, for stamp reads and writes.
FULL, RANGE, STRIDED, EMPTY = 0, 1, 2, 3


class Stamps:
    """One kind of per-element stamp (``w`` or ``r``) of a storage, in one of three exact representations:
    uniform int ``u``; segments (``u`` None, ``segs`` a dict of disjoint ranges ``(lo, hi) -> stamp``, every
    other element holding ``sbase``); or per-element array ``a`` (``u`` and ``segs`` None).

    In per-element mode ``ranges`` remembers, for contiguous ranges ``(lo, hi)`` of elements, the largest
    stamp in them (set when a range is stamped or its maximum computed, dropped when a write overlaps it),
    so the ring buffers of a pipelined kernel cost a dict look-up instead of a reduction."""

    __slots__ = ("u", "a", "n", "ranges", "segs", "sbase")

    def __init__(self, n: int):
        self.u, self.a, self.n, self.ranges, self.segs, self.sbase = 0, None, n, {}, None, 0

    def materialise(self) -> None:
        """Switch to per-element mode, every element holding the stamp it has now."""
        segs = self.segs
        fill = self.u if segs is None else self.sbase
        if self.a is None:
            self.a = np.full(self.n, fill, dtype=np.int64)
        else:
            self.a.fill(fill)
        self.u = None
        self.ranges = {}
        if segs is not None:
            a = self.a
            for (lo, hi), t in segs.items():
                a[lo:hi] = t
            self.ranges = dict(segs) if len(segs) <= _MAX_RANGES else {}
            self.segs = None

    def seg_max(self, lo: int, hi: int) -> int:
        """In segment mode: the largest stamp over elements ``[lo, hi)`` (``lo < hi``)."""
        best, covered = None, 0
        for (a, b), t in self.segs.items():
            if a < hi and lo < b:
                covered += min(b, hi) - max(a, lo)
                if best is None or t > best:
                    best = t
        if covered < hi - lo and (best is None or self.sbase > best):
            best = self.sbase
        return best

    def seg_set(self, lo: int, hi: int, t: int) -> bool:
        """In segment mode: stamp ``t`` on ``[lo, hi)`` if the segments stay disjoint and few (ranges
        inside it are replaced); False (nothing changed) when the range overlaps one in part."""
        segs = self.segs
        key = (lo, hi)
        if key in segs:
            segs[key] = t
            return True
        inside = []
        for k in segs:
            if k[0] < hi and lo < k[1]:
                if not (lo <= k[0] and k[1] <= hi):
                    return False
                inside.append(k)
        if len(segs) - len(inside) >= _MAX_SEGS:
            return False
        for k in inside:
            del segs[k]
        segs[key] = t
        return True


class StorageRT:
    """The run-time state of one storage: its data (1-D numpy array, shared with the io tensor for
    io storages) and its ``w``/``r`` timing stamps."""

    __slots__ = ("id", "kind", "name", "dtype", "n", "data", "w", "r", "label")

    def __init__(self, sid: int, kind: str, name: str, dtype: str, data: np.ndarray):
        self.id, self.kind, self.name, self.dtype = sid, kind, name, dtype
        self.data = data
        self.n = data.size
        self.w, self.r = Stamps(self.n), Stamps(self.n)
        self.label = name if kind == "io" else (name or f"spm#{sid}")


def new_storage(st, data=None) -> StorageRT:
    """Run-time state for an ``ir.Storage``; SPM storages get a fresh zeroed buffer."""
    if data is None:
        data = np.zeros(st.numel, dtype=_NP_DTYPE[st.dtype])
    return StorageRT(st.id, st.kind, st.name, st.dtype, data)


class RV:
    """A view resolved for concrete offset and sizes: numpy data view, shape and timing access.

    ``data`` is the numpy view (shape ``shape``); ``wdata``/``widx`` give a write target without
    self-overlap (broadcast output dimensions collapsed so the last write wins, spec §3).
    """

    __slots__ = ("st", "w", "r", "shape", "numel", "data", "wdata", "widx", "tk", "lo", "hi", "t_shape",
                 "t_strides", "_views", "off", "strides")

    def __init__(self, st: StorageRT, off: int, sizes: tuple, strides: tuple):
        self.st = st
        self.off, self.strides = off, strides
        self.w, self.r = st.w, st.r  # one hop less on the hot path
        self.shape = sizes
        numel = 1
        for s in sizes:
            numel *= s
        self.numel = numel
        item = _ITEMSIZE[st.dtype]
        if numel == 0:
            self.data = np.empty(sizes, dtype=st.data.dtype)
        else:
            self.data = np.ndarray(sizes, st.data.dtype, buffer=st.data, offset=off * item,
                                   strides=tuple(s * item for s in strides))
        self.wdata, self.widx = write_target(self.data, sizes, strides)
        self._views = {}
        self._layout(off, sizes, strides)

    def _layout(self, off, sizes, strides):
        """Classify the element set: FULL storage, a contiguous RANGE [lo, hi), STRIDED or EMPTY."""
        if self.numel == 0:
            self.tk = EMPTY
            return
        dims = sorted(((abs(st), sz) for sz, st in zip(sizes, strides) if st != 0 and sz > 1), reverse=True)
        lo = off + sum((sz - 1) * st for sz, st in zip(sizes, strides) if st < 0)
        expect, count = 1, 1
        contiguous = True
        for st, sz in reversed(dims):
            if st != expect:
                contiguous = False
            expect = st * sz
            count *= sz
        if contiguous:
            self.lo, self.hi = lo, lo + count
            self.tk = FULL if (lo == 0 and count == self.st.n) else RANGE
        else:
            self.tk = STRIDED
            self.lo = lo
            self.t_shape = tuple(sz for _, sz in dims)
            self.t_strides = tuple(st * 8 for st, _ in dims)

    def stamp_view(self, stamps: Stamps) -> np.ndarray:
        """This view's elements in ``stamps``' per-element array (which must be materialised)."""
        v = self._views.get(stamps)
        if v is None:
            arr = stamps.a
            if self.tk == RANGE or self.tk == FULL:
                v = arr[self.lo:self.hi]
            else:
                v = np.ndarray(self.t_shape, np.int64, buffer=arr, offset=self.lo * 8, strides=self.t_strides)
            self._views[stamps] = v
        return v

    def write(self, result) -> None:
        """Write ``result`` (shape ``shape``) into the view; for a broadcast output dimension the last
        element along it wins (spec §3)."""
        if self.widx is None:
            np.copyto(self.data, result, casting="unsafe")
        else:
            np.copyto(self.wdata, np.asarray(result)[self.widx], casting="unsafe")


def view_of(data: np.ndarray, off: int, sizes: tuple, strides: tuple) -> np.ndarray:
    """The numpy view of ``data`` (a storage's 1-D array) at element offset ``off`` with element ``strides``
    (bounds already checked); a fresh empty array for an empty view."""
    if 0 in sizes:
        return np.empty(sizes, dtype=data.dtype)
    item = data.itemsize
    return np.ndarray(sizes, data.dtype, buffer=data, offset=off * item, strides=tuple(s * item for s in strides))


def write_target(data: np.ndarray, sizes: tuple, strides: tuple) -> tuple:
    """``(wdata, widx)`` of a view: where a result is written without self-overlap. Broadcast (stride 0)
    dimensions of size > 1 are collapsed so the result's last element along each wins (spec §3); size-1
    slices keep every dimension, so even an all-broadcast view stays an array. ``widx`` is None when no
    dimension is broadcast (``wdata`` is then ``data``)."""
    if not any(st_ == 0 and sz > 1 for sz, st_ in zip(sizes, strides)):
        return data, None
    bcast = [st_ == 0 and sz > 1 for sz, st_ in zip(sizes, strides)]
    return (data[tuple(slice(0, 1) if b else slice(None) for b in bcast)],
            tuple(slice(-1, None) if b else slice(None) for b in bcast))


_MAX_RANGES = 64  # remembered ranges per stamp array; beyond that the memory starts afresh
_MAX_SEGS = 64  # segments per stamp set; one more switches it to a per-element array


def stamp_max(rv: RV, stamps: Stamps) -> int:
    """Largest stamp over the view's elements (0 for an empty view); ``stamps`` is ``rv.st.w`` or ``.r``."""
    u = stamps.u
    if u is not None:
        return u if rv.numel else 0
    tk = rv.tk
    if tk == EMPTY:
        return 0
    segs = stamps.segs
    if segs is not None:
        if tk == RANGE:
            t = segs.get((rv.lo, rv.hi))
            return t if t is not None else stamps.seg_max(rv.lo, rv.hi)
        if tk == FULL:
            return stamps.seg_max(0, stamps.n)
        stamps.materialise()  # a strided view (rare)
    if tk == RANGE:
        key = (rv.lo, rv.hi)
        t = stamps.ranges.get(key)
        if t is None:
            t = int(rv.stamp_view(stamps).max())
            if len(stamps.ranges) >= _MAX_RANGES:
                stamps.ranges.clear()
            stamps.ranges[key] = t
        return t
    return int(rv.stamp_view(stamps).max())


def view_elements(rv: RV) -> np.ndarray:
    """The flat indices of the storage elements the view touches (the set timing uses: broadcast and
    size-1 dimensions count once), in no particular order."""
    tk = rv.tk
    if tk == EMPTY:
        return np.empty(0, np.int64)
    if tk != STRIDED:
        return np.arange(rv.lo, rv.hi, dtype=np.int64)
    idx = np.array(rv.lo, dtype=np.int64)
    for sz, st in zip(rv.t_shape, rv.t_strides):
        idx = idx[..., None] + np.arange(sz, dtype=np.int64) * (st // 8)
    return idx.reshape(-1)


def view_contains(rv: RV, e: int) -> bool:
    """Whether the view touches storage element ``e``."""
    tk = rv.tk
    if tk == EMPTY:
        return False
    if tk != STRIDED:
        return rv.lo <= e < rv.hi
    return bool((view_elements(rv) == e).any())


def element_with_stamp(rv: RV, stamps: Stamps, t: int) -> int | None:
    """A storage element of the view whose stamp (in ``stamps``: ``w`` or ``r``) is ``t``, the first in
    storage order; None when there is none. Read-only: used to explain a stall (traced jobs only)."""
    if rv.tk == EMPTY:
        return None
    if stamps.u is not None:
        return rv.lo if stamps.u == t else None
    if rv.tk != STRIDED:  # a contiguous range [lo, hi): no index array needed
        return _first_in_range(stamps, rv.lo, rv.hi, t)
    idx = np.sort(view_elements(rv))
    if stamps.segs is not None:
        vals = np.full(idx.shape, stamps.sbase, dtype=np.int64)
        for (lo, hi), s in stamps.segs.items():
            vals[(idx >= lo) & (idx < hi)] = s
    else:
        vals = stamps.a[idx]
    hits = np.flatnonzero(vals == t)
    return int(idx[hits[0]]) if hits.size else None


def _first_in_range(stamps: Stamps, lo: int, hi: int, t: int) -> int | None:
    """The first element of ``[lo, hi)`` whose stamp is ``t`` (``element_with_stamp`` of a range view)."""
    if stamps.segs is None:
        hits = np.flatnonzero(stamps.a[lo:hi] == t)
        return lo + int(hits[0]) if hits.size else None
    best = None
    covered = []  # the segments' parts inside [lo, hi): elements outside them hold sbase
    for (a, b), s in stamps.segs.items():
        a, b = max(a, lo), min(b, hi)
        if a < b:
            covered.append((a, b))
            if s == t and (best is None or a < best):
                best = a
    if stamps.sbase == t:
        e = lo
        for a, b in sorted(covered):
            if e < a:
                break
            e = max(e, b)
        if e < hi and (best is None or e < best):
            best = e
    return best


def stamp_set(rv: RV, stamps: Stamps, t: int) -> None:
    """Assign stamp ``t`` on every element of the view (uniform again when the view is full)."""
    tk = rv.tk
    if tk == FULL:
        stamps.u = t
        stamps.segs = None
    elif tk != EMPTY:
        if tk == RANGE:
            u = stamps.u
            if u is not None:
                stamps.u, stamps.sbase, stamps.segs = None, u, {(rv.lo, rv.hi): t}
                return
            if stamps.segs is not None:
                if stamps.seg_set(rv.lo, rv.hi, t):
                    return
                stamps.materialise()
        elif stamps.u is not None or stamps.segs is not None:
            stamps.materialise()
        rv.stamp_view(stamps)[...] = t
        ranges = stamps.ranges
        if tk == RANGE:
            lo, hi = rv.lo, rv.hi
            if ranges:
                for key in [k for k in ranges if k[0] < hi and lo < k[1]]:
                    del ranges[key]
                if len(ranges) >= _MAX_RANGES:
                    ranges.clear()
            ranges[(lo, hi)] = t
        elif ranges:
            ranges.clear()  # a strided write: forget everything (rare)


def check_bounds(st: StorageRT, off, sizes, strides, where: str):
    """Spec §3's bounds check; raises ``OutOfBoundsError`` (an IndexError), ``ShapeError`` (a negative
    size) or ``ValueError`` (an empty view starting past the storage's end, as in the handout)."""
    for s in sizes:
        if s < 0:
            raise ShapeError(f"{where}: view of '{st.label}' has a negative size {tuple(sizes)}")
    empty = 0 in sizes
    if empty:  # spec §3's sum as written: a size-0 dimension counts -stride
        last = off + sum((s - 1) * d for s, d in zip(sizes, strides))
        first = off
    else:
        first = off + sum((s - 1) * d for s, d in zip(sizes, strides) if d < 0)
        last = off + sum((s - 1) * d for s, d in zip(sizes, strides) if d > 0)
    if first < 0 or last >= st.n:
        raise OutOfBoundsError(
            f"{where}: view of '{st.label}' (offset {off}, sizes {tuple(sizes)}, strides {tuple(strides)}) "
            f"reaches element {first if first < 0 else last}, outside its {st.n} elements")
    if empty and off > st.n:  # past the check, the handout's numpy view of an empty tile must start in its buffer
        raise LaunchValueError(f"{where}: an empty view of '{st.label}' starts at element {off}, past the end "
                               f"of its {st.n} elements")
