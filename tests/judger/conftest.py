"""Fixtures of the judger tests."""
import pytest

from judger.grading import load_submission
from judger_testlib import BASELINE


@pytest.fixture
def baseline_module():
    return load_submission(BASELINE)
