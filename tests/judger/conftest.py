"""Fixtures of the judger tests."""
import pytest

from judger.grading import load_submission
from judger_testlib import BASELINE


@pytest.fixture
def baseline_module():
    return load_submission(BASELINE)


@pytest.fixture(autouse=True, scope="session")
def private_data_cache(tmp_path_factory):
    """The judger tests write the test-point data cache (judger.testdata) into the run's temporary directory,
    one for all xdist workers (its files are keyed by content and written atomically; the data of all ten
    points is some 450 MB, made once per run)."""
    import os

    from judger import testdata

    old = os.environ.get(testdata.DIR_ENV)
    run_dir = os.environ.get("KDT_GRADE_TEST_RUN_DIR")
    shared = os.path.join(run_dir, "testpoint-cache") if run_dir else str(tmp_path_factory.mktemp("testpoint-cache"))
    os.makedirs(shared, exist_ok=True)
    os.environ[testdata.DIR_ENV] = shared
    yield
    if old is None:
        os.environ.pop(testdata.DIR_ENV, None)
    else:
        os.environ[testdata.DIR_ENV] = old
