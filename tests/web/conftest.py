import sys
from pathlib import Path

# the shared conformance helpers (tests/kdt/conformance.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kdt"))
