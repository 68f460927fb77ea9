"""The background writer (tuner/track/writer.py): in order, off the caller's thread, failing once."""

from __future__ import annotations

import threading
import time

from tuner.track.writer import BackgroundWriter


def failures() -> tuple[list[tuple[str, str]], BackgroundWriter]:
    seen: list[tuple[str, str]] = []
    return seen, BackgroundWriter(lambda what, err: seen.append((what, str(err))))


def test_writes_run_in_order_on_another_thread_and_submit_does_not_wait() -> None:
    seen, writer = failures()
    gate, done, threads = threading.Event(), [], set()

    def blocked() -> None:
        gate.wait(10)
        done.append("first")

    writer.submit("first", blocked)
    for i in range(5):
        writer.submit(f"write {i}", lambda i=i: (done.append(i), threads.add(threading.get_ident())))
    start = time.perf_counter()
    writer.submit("last", lambda: done.append("last"))
    assert time.perf_counter() - start < 0.5  # queued behind a blocked write, without waiting for it
    assert done == [] and writer.pending() == 7
    gate.set()
    assert writer.close(10) == 0
    assert done == ["first", 0, 1, 2, 3, 4, "last"]
    assert threads and threading.get_ident() not in threads
    assert seen == []


def test_the_first_failure_is_reported_once_and_later_writes_are_dropped() -> None:
    seen, writer = failures()
    done: list[int] = []

    def fail() -> None:
        raise ConnectionError("the server went away")

    writer.submit("logging metrics", lambda: done.append(1))
    writer.submit("closing a trial run", fail)
    writer.submit("closing a trial run", fail)
    writer.submit("opening a trial run", lambda: done.append(2))
    assert writer.drain(10) == 0
    assert seen == [("closing a trial run", "the server went away")]
    assert done == [1] and writer.offline
    writer.submit("opening a trial run", lambda: done.append(3))  # offline: not even queued
    assert writer.pending() == 0 and done == [1]


def test_a_drain_is_bounded_and_says_how_many_writes_are_left() -> None:
    _, writer = failures()
    gate = threading.Event()
    writer.submit("slow", lambda: gate.wait(10))
    writer.submit("after", lambda: None)
    start = time.perf_counter()
    assert writer.drain(0.3) == 2
    assert 0.25 < time.perf_counter() - start < 5
    gate.set()
    assert writer.close(10) == 0


def test_a_closed_writer_starts_again_on_the_next_write() -> None:
    _, writer = failures()
    done: list[int] = []
    writer.submit("one", lambda: done.append(1))
    assert writer.close(10) == 0
    writer.submit("two", lambda: done.append(2))
    assert writer.close(10) == 0
    assert done == [1, 2]
