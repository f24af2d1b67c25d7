"""The KDT-TPU cycle simulator (spec kdt-semantics.md §3-§4)."""
from .launch import DEFAULT_TIMEOUT, launch_kernel
from .profile import JobRun, Profile, TraceEntry
from .replay import Recording, replay_kernel
from .spec import TPUSpec

__all__ = ["DEFAULT_TIMEOUT", "JobRun", "Profile", "Recording", "TPUSpec", "TraceEntry", "launch_kernel",
           "replay_kernel"]
