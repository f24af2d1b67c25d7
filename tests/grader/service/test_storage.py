"""The content-addressed submission store (grader.runtime.storage)."""
import hashlib
import os

import pytest

from grader.runtime import storage


def test_store_writes_the_file_under_its_hash_and_load_reads_it_back(tmp_path):
    data = b"def get_kernel(t):\n    return None\n"
    sha, path = storage.store(tmp_path, data)
    assert sha == hashlib.sha256(data).hexdigest()
    assert path == tmp_path / "submissions" / sha[:2] / f"{sha}.py"
    assert path.read_bytes() == data
    assert storage.load(tmp_path, sha) == data


def test_storing_the_same_content_twice_keeps_one_file_and_leaves_no_temporary_files(tmp_path):
    data = "x = 'é'\n".encode()
    first = storage.store(tmp_path, data)
    mtime = first[1].stat().st_mtime_ns
    assert storage.store(tmp_path, data) == first
    assert first[1].stat().st_mtime_ns == mtime  # not rewritten
    assert [p.name for p in first[1].parent.iterdir()] == [first[1].name]
    other = storage.store(tmp_path, data + b"# another\n")
    assert other[0] != first[0]
    assert len(list((tmp_path / "submissions").rglob("*"))) == 3 + (other[0][:2] != first[0][:2])


def test_a_damaged_file_is_detected_on_load_and_repaired_by_the_next_store(tmp_path):
    data = b"print('hi')\n"
    sha, path = storage.store(tmp_path, data)
    path.write_bytes(b"print('tampered')\n")
    with pytest.raises(storage.CorruptFile):
        storage.load(tmp_path, sha)
    storage.store(tmp_path, data)
    assert storage.load(tmp_path, sha) == data


def test_missing_files_and_malformed_hashes(tmp_path):
    with pytest.raises(FileNotFoundError):
        storage.load(tmp_path, "0" * 64)
    for bad in ("../../etc/passwd", "A" * 64, "0" * 63, ""):
        with pytest.raises(ValueError):
            storage.path_for(tmp_path, bad)


def test_stored_files_are_private_to_the_service(tmp_path):
    """Sandboxed children run under other user ids: they must not read stored submissions."""
    data = tmp_path / "data"
    _, path = storage.store(data, b"a = 1\n")
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(data).st_mode & 0o777 == 0o700
