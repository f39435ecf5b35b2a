"""The background workers' requests are pickled and written by a sender thread, off the stepping
path (issue 30, tails): in the order they were made, answered as before, and a request that
cannot be pickled is an error of the client that made it, not an exception in a step."""

import threading
import time

import numpy as np

from embed.background import worker_pipe
from embed.background.client import BackgroundCompiler
from scenarios.disk_fence import jobs, modes


def answered(bc, timeout=120):
    deadline = time.monotonic() + timeout
    while bc.outstanding and time.monotonic() < deadline:
        bc.poll(100)
        time.sleep(0.005)
    assert not bc.outstanding, bc.errors


def test_requests_are_pickled_in_the_sender_thread_in_order(monkeypatch):
    """Three fences asked at once (a polynomial one: the compiled family's coefficients; two
    free-form): every frame pickled in the thread "embed-sender", never in the caller's, and
    the answers come in the order asked, each for its own version and number."""
    from scenarios import disk_fence
    pvec = np.array(disk_fence.build().simulator().pvec)
    threads, frame = [], worker_pipe.frame

    def spy(obj):
        threads.append(threading.current_thread().name)
        return frame(obj)

    monkeypatch.setattr(worker_pipe, "frame", spy)
    bc = BackgroundCompiler("disk_fence", {})
    try:
        assert bc.wait_ready(120)
        asked = [(1, "0.01*s**2 + 0.001*s**3"), (2, "0.5*(1 - cos(0.3*s))"),
                 (3, "0.5*(1 - cos(0.31*s))")]
        for v, text in asked:
            bc.call(jobs.PREPARE_FENCE, v, ("curve", text, 6.7), pvec, False, 10 + v)
        answered(bc)
        assert not bc.errors, bc.errors
        parts = [p for _, p in bc.call_results()]
        assert [(p[0], p[1]) for p in parts] == [("ready", 1), ("terms", 2), ("embed", 2),
                                                 ("terms", 3), ("embed", 3)], parts
        assert parts[0][2] == modes.POLY
        assert [parts[k][2] for k in (1, 3)] == [12, 13]
        assert threads and set(threads) == {"embed-sender"}, threads
    finally:
        bc.close()


def test_a_request_that_cannot_be_pickled_is_the_clients_error():
    """A job's argument that pickle refuses (a lambda): the client's ``errors`` name the job
    and say why; nothing stays outstanding, and the next request is answered."""
    bc = BackgroundCompiler("disk_fence", {})
    try:
        assert bc.wait_ready(120)
        bc.call(jobs.PREPARE_FENCE, 1, lambda: None)
        answered(bc)
        (what, message, _), = bc.errors
        assert what == jobs.PREPARE_FENCE and "could not be sent" in message, message
        assert "lambda" in message or "pickle" in message.lower(), message
        bc.errors.clear()
        from scenarios import disk_fence
        pvec = np.array(disk_fence.build().simulator().pvec)
        bc.call(jobs.PREPARE_FENCE, 2, ("curve", "0.01*s**2 + 0.001*s**3", 6.7), pvec)
        answered(bc)
        assert not bc.errors and [p[:2] for _, p in bc.call_results()] == [("ready", 2)]
    finally:
        bc.close()
