"""Fixtures of the judger tests."""
import pytest

from judger.grading import load_submission
from judger_testlib import BASELINE


@pytest.fixture
def baseline_module():
    return load_submission(BASELINE)


@pytest.fixture(autouse=True, scope="session")
def private_data_cache(tmp_path_factory):
    """The judger tests write the test-point data cache (judger.testdata) into a temporary directory."""
    import os

    from judger import testdata

    old = os.environ.get(testdata.DIR_ENV)
    os.environ[testdata.DIR_ENV] = str(tmp_path_factory.mktemp("testpoint-cache"))
    yield
    if old is None:
        os.environ.pop(testdata.DIR_ENV, None)
    else:
        os.environ[testdata.DIR_ENV] = old
