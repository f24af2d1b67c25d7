"""``TPUSpec``: the simulated machine (spec kdt-semantics.md §1, §4)."""
from dataclasses import dataclass

from .errors import ValueError as LaunchValueError


@dataclass(frozen=True)
class TPUSpec:
    """A KDT-TPU: ``num_sms`` SMs, each with an issue unit, a VXM, an MXM and ``spm_size`` bytes of SPM.

    ``load_store_latency`` is L_mem (cycles per load/store); ``vxm_trpt`` elements per cycle on the VXM;
    ``mxm_trpt`` multiply-accumulates per cycle on the MXM. Raises ``ValueError`` for non-positive or
    non-int values.
    """

    num_sms: int
    load_store_latency: int
    spm_size: int = 1048576
    vxm_trpt: int = 128
    mxm_trpt: int = 2048

    def __post_init__(self):
        for name in ("num_sms", "load_store_latency", "spm_size", "vxm_trpt", "mxm_trpt"):
            v = getattr(self, name)
            if type(v) is not int or v < (0 if name in ("load_store_latency", "spm_size") else 1):
                raise LaunchValueError(f"TPUSpec.{name} must be a positive int, got {v!r}")
