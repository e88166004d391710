"""A crash at every step of installing a cleaned segment, and at every point of a pass:
the partition that opens next holds either the old segments or the cleaned one, never
a mix, and no leftover file."""

import os
import threading

import pytest

from weir.broker.log import cleaner_process, compactor, segment_swap
from tests.log.cleaner_helpers import clean, latest, make_cleaner, open_compacted, put, records

LEFTOVER_SUFFIXES = (".cleaned", ".swap", ".deleted")


class Crash(Exception):
    pass


async def build(directory):
    p = open_compacted(directory)
    for i in range(3):
        await put(p, (b"k", b"v%d" % i), (b"only%d" % i, b"x"))
        await put(p, (b"gone", b"v"))
        p.roll()
    await put(p, (b"gone", None))
    await put(p, (b"k", b"final"))
    p.roll()
    await put(p, (b"active", b"a"))
    return p


def leftovers(directory):
    return sorted(name for name in os.listdir(directory) if name.endswith(LEFTOVER_SUFFIXES))


def crash_on_call(monkeypatch, module, name, n):
    """Make the n-th call of ``module.name`` (0-based) raise, as if the process died there."""
    real = getattr(module, name)
    calls = {"count": 0}

    def maybe_crash(*args, **kwargs):
        if calls["count"] == n:
            calls["count"] += 1
            raise Crash(f"{name} call {n}")
        calls["count"] += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, maybe_crash)
    return calls


async def expected_states(tmp_path):
    before = await build(tmp_path / "before" / "t-0")
    original = records(before)
    after = await build(tmp_path / "after" / "t-0")
    await clean(after)
    return original, records(after), latest(after)


async def test_crash_at_each_step_of_the_swap(tmp_path, monkeypatch):
    original, cleaned, state = await expected_states(tmp_path)
    assert original != cleaned
    outcomes = set()
    for step in range(100):
        directory = tmp_path / f"run{step}" / "t-0"
        p = await build(directory)
        with monkeypatch.context() as patch:
            calls = crash_on_call(patch, segment_swap.os, "rename", step)
            try:
                await clean(p)
            except Crash:
                pass
            else:
                assert calls["count"] == step, "no rename was left to crash at"
                break
        # the process died: a new one opens the directory
        again = open_compacted(directory)
        assert leftovers(directory) == [], f"step {step}"
        assert records(again) in (original, cleaned), f"step {step}: a mix of old and cleaned segments"
        assert latest(again) == state
        outcomes.add("cleaned" if records(again) == cleaned else "original")
        # and the cleaner carries on from there
        await clean(again)
        assert records(again) == cleaned
    else:
        pytest.fail("the swap never completed")
    assert outcomes == {"original", "cleaned"}, "crashes before and after the commit point were both tried"


async def test_crash_before_the_replaced_files_are_deleted(tmp_path, monkeypatch):
    _original, cleaned, _state = await expected_states(tmp_path)
    directory = tmp_path / "run" / "t-0"
    p = await build(directory)
    with monkeypatch.context() as patch:
        patch.setattr(segment_swap, "_unlink", lambda path: (_ for _ in ()).throw(Crash()))
        with pytest.raises(Crash):
            await clean(p)
    assert any(name.endswith(".deleted") for name in os.listdir(directory))
    again = open_compacted(directory)
    assert leftovers(directory) == []
    assert records(again) == cleaned


@pytest.mark.parametrize("crash_at", ["offset map", "writing", "finish"])
async def test_crash_during_the_pass_leaves_the_log_as_it_was(tmp_path, monkeypatch, crash_at):
    original, _cleaned, _state = await expected_states(tmp_path)
    directory = tmp_path / "run" / "t-0"
    p = await build(directory)
    if crash_at == "offset map":
        monkeypatch.setattr(compactor.Compactor, "_build_offset_map", lambda self: (_ for _ in ()).throw(Crash()))
    elif crash_at == "writing":
        crash_on_call(monkeypatch, segment_swap.CleanedSegmentWriter, "append", 2)
    else:
        monkeypatch.setattr(segment_swap.CleanedSegmentWriter, "finish",
                            lambda self, aborted: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        await clean(p, runner=cleaner_process.in_thread)  # patched here, so run here
    assert records(p) == original, "the running partition is untouched"
    again = open_compacted(directory)
    assert leftovers(directory) == []
    assert records(again) == original


async def test_a_killed_pass_leaves_cleaned_files_that_start_up_removes(tmp_path, monkeypatch):
    """As after kill -9 mid-write: part of a .cleaned file on disk, nothing cleaned it up."""
    original, _cleaned, _state = await expected_states(tmp_path)
    directory = tmp_path / "run" / "t-0"
    p = await build(directory)
    cleaner = make_cleaner(p)
    plan = cleaner._plan(cleaner.log_to_clean(p, cleaner.clock.now_ms()))
    writer_append = segment_swap.CleanedSegmentWriter.append

    def append_then_die(self, batch):
        writer_append(self, batch)
        self._log.write(self._buffer)
        self._log.flush()
        raise Crash()
    monkeypatch.setattr(segment_swap.CleanedSegmentWriter, "append", append_then_die)
    monkeypatch.setattr(segment_swap.CleanedSegmentWriter, "discard", lambda self: None)  # no chance to tidy
    with pytest.raises(Crash):
        compactor.Compactor(plan, threading.Event()).run()
    assert any(name.endswith(".log.cleaned") for name in os.listdir(directory))
    again = open_compacted(directory)
    assert leftovers(directory) == []
    assert records(again) == original


async def test_deleting_a_topic_aborts_a_pass_on_it(tmp_path, monkeypatch):
    import asyncio
    original, _cleaned, _state = await expected_states(tmp_path)
    p = await build(tmp_path / "run" / "t-0")
    cleaner = make_cleaner(p, runner=cleaner_process.in_thread)  # patched here, so run here
    cleaner.checkpoint.offsets[("t", 0)] = 0
    started = threading.Event()
    check_stop = compactor.Compactor._check_stop

    def wait_for_abort(self):
        started.set()
        self.stop.wait(10)
        check_stop(self)
    monkeypatch.setattr(compactor.Compactor, "_check_stop", wait_for_abort)
    task = asyncio.get_running_loop().create_task(clean(p, cleaner=cleaner))
    assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
    await cleaner.forget(p)
    assert await task is None, "the pass was aborted, nothing installed"
    assert ("t", 0) not in cleaner.checkpoint.offsets
    assert leftovers(p.directory) == [] and records(p) == original



async def test_a_cleaner_process_killed_mid_pass_fails_that_pass_and_the_next_starts_a_new_one(tmp_path,
                                                                                                 monkeypatch):
    original, cleaned, _state = await expected_states(tmp_path)  # also starts the child process
    p = await build(tmp_path / "run" / "t-0")
    child = cleaner_process._CHILD
    killed = child._process.pid
    send_descriptors = cleaner_process.sendfds

    def kill_then_send(sock, fds):  # the child dies with the plan sent, before its segments come
        child._process.kill()
        child._process.wait()
        send_descriptors(sock, fds)
    with monkeypatch.context() as patch:
        patch.setattr(cleaner_process, "sendfds", kill_then_send)
        with pytest.raises(OSError, match="child process"):
            await clean(p)
    assert leftovers(p.directory) == [] and records(p) == original
    assert await clean(p) is not None
    assert records(p) == cleaned
    assert child._process.pid != killed


async def test_the_replaced_segments_files_are_closed_in_a_worker_thread(tmp_path, monkeypatch):
    """Their files were unlinked while open: the last close frees the blocks, off the event loop."""
    import os
    from tests.support.waiting import wait_until_async
    from weir.broker.log import segment as segment_module
    p = await build(tmp_path / "t-0")
    closed_by = []
    real_close = os.close
    monkeypatch.setattr(segment_module.os, "close",
                        lambda fd: (closed_by.append(threading.current_thread()), real_close(fd))[1])

    def open_deleted_files():
        return [target for fd in os.listdir("/proc/self/fd")
                if (target := os.readlink(f"/proc/self/fd/{fd}") if os.path.exists(f"/proc/self/fd/{fd}") else "")
                .startswith(str(p.directory)) and target.endswith("(deleted)")]
    await clean(p)
    await wait_until_async(lambda: not open_deleted_files(), "the replaced segments' files closed")
    assert closed_by and threading.main_thread() not in closed_by


async def test_a_pass_in_the_child_process_aborted_as_it_starts_leaves_the_log_as_it_was(tmp_path, monkeypatch):
    original, _cleaned, _state = await expected_states(tmp_path)
    p = await build(tmp_path / "run" / "t-0")
    send_descriptors = cleaner_process.sendfds
    aborts = []

    def in_child_process(plan, abort):
        aborts.append(abort)
        return cleaner_process.in_child_process(plan, abort)

    def send_then_abort(sock, fds):  # the broker stops just as the child gets the pass
        send_descriptors(sock, fds)
        aborts[-1].set()
    monkeypatch.setattr(cleaner_process, "sendfds", send_then_abort)
    assert await clean(p, runner=in_child_process) is None, "nothing installed"
    assert leftovers(p.directory) == [] and records(p) == original
    monkeypatch.undo()
    assert await clean(p) is not None, "the child serves the next pass"
