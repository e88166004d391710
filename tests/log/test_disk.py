"""The disk layer (broker/log/disk.py): one state per data directory, torn writes cut back,
temporary files removed, the state logged once per spell."""

import errno
import logging
import os

import pytest

from weir.broker.log import disk
from weir.protocol.errors import Errors, KafkaError


@pytest.fixture
def faults(tmp_path, monkeypatch):
    rules = tmp_path / "rules"
    monkeypatch.setattr(disk, "_faults", disk.Faults(str(rules)))

    def set_rules(*lines):
        tmp = tmp_path / "rules.tmp"
        tmp.write_text("".join(line + "\n" for line in lines))
        os.replace(tmp, rules)
    return set_rules


@pytest.fixture
def data_dir(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    state = disk.register(root)
    yield root
    disk._dirs.pop(state.root)


def test_a_failed_write_is_cut_back_and_the_first_good_one_recovers(data_dir, faults, caplog):
    path = str(data_dir / "seg.log")
    fd = disk.open_file(path)
    disk.write_at(fd, path, [b"abc"], 3, 0)
    faults("ENOSPC */seg.log")
    caplog.set_level(logging.INFO, logger=disk.__name__)
    for _ in range(3):
        with pytest.raises(KafkaError) as raised:
            disk.write_at(fd, path, [b"x" * 100], 100, 3)
        assert raised.value.error == Errors.KAFKA_STORAGE_ERROR
    assert os.path.getsize(path) == 3  # the torn half was cut
    state = disk.log_dir_of(path)
    assert state.offline and state.failed_writes == 3
    faults()
    disk.write_at(fd, path, [b"def"], 3, 3)
    os.close(fd)
    assert open(path, "rb").read() == b"abcdef"
    assert not state.offline
    messages = [record.getMessage() for record in caplog.records]
    assert sum("writes are failing" in m for m in messages) == 1
    assert sum("writes succeed again after 3 failed" in m for m in messages) == 1


def test_replace_durably_keeps_the_old_contents_and_no_temporary_file(data_dir, faults):
    path = data_dir / "checkpoint"
    disk.replace_durably(path, b"old")
    faults("EIO */checkpoint")
    with pytest.raises(KafkaError):
        disk.replace_durably(path, b"new")
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in data_dir.iterdir()) == ["checkpoint"]


def test_paths_map_to_the_longest_registered_directory(tmp_path):
    outer, inner = disk.register(tmp_path), disk.register(tmp_path / "inner")
    try:
        assert disk.log_dir_of(tmp_path / "inner" / "a-0" / "x.log") is inner
        assert disk.log_dir_of(tmp_path / "innerx" / "y") is outer
        assert disk.register(tmp_path) is outer
    finally:
        disk._dirs.pop(outer.root)
        disk._dirs.pop(inner.root)


def test_out_of_descriptors_is_not_the_disk(data_dir, caplog):
    state = disk.log_dir_of(data_dir)
    error = disk.failed(data_dir, OSError(errno.EMFILE, "Too many open files"), "cannot open x")
    assert error.error == Errors.KAFKA_STORAGE_ERROR
    assert not state.offline
