"""A study's cluster and its progress line (issue 16): the Dask client of an existing
scheduler or of a LocalCluster (``connect``), and cases done, failed, rate and time left on
stderr (``Progress``)."""

from __future__ import annotations

import logging
import math
import os
import sys
import time

from embed.base.errors import InputError

PROG = "embed-fmu"


def connect(scheduler, workers):
    """(client, [things to close]): of an existing scheduler, else of a LocalCluster with
    ``workers`` processes (default: the cores), one thread each."""
    from distributed import Client, LocalCluster

    if scheduler:
        if workers:
            raise InputError("--workers is for the local cluster; an existing cluster "
                             "(--scheduler) has its own")
        try:
            client = Client(scheduler, timeout="20s")
        except OSError as exc:
            raise InputError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        return client, [client]
    n = workers or os.cpu_count() or 1
    if not isinstance(n, int) or n < 1:
        raise InputError(f"workers = {n!r}: give a number of processes >= 1")
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    client = Client(cluster)
    return client, [client, cluster]


class Progress:
    """Cases done, failed, rate and time left, on stderr: a ``\\r`` line on a terminal
    (twice a second at most), else a line every 5 s, and the last one always."""

    def __init__(self, total: int, show: bool = True):
        self.total, self.show = total, show
        self.done_n = self.failed = 0
        self.t0 = time.perf_counter()
        self.shown = -math.inf
        self.tty = sys.stderr.isatty()

    def line(self) -> str:
        wall = time.perf_counter() - self.t0
        rate = self.done_n / wall if wall > 0 else 0.0
        left = (self.total - self.done_n) / rate if rate > 0 else math.inf
        tail = f", {left:.0f} s left" if self.done_n < self.total and math.isfinite(left) else \
            f" in {wall:.1f} s" if self.done_n == self.total else ""
        return (f"{PROG}: sweep: {self.done_n}/{self.total} cases done, {self.failed} failed, "
                f"{rate:.1f} cases/s{tail}")

    def update(self, n: int, failed: int):
        self.done_n += n
        self.failed += failed
        now = time.perf_counter()
        if self.show and now - self.shown >= (0.5 if self.tty else 5.0):
            self.shown = now
            self._print()

    def _print(self, end=False):
        text = self.line()
        print("\r" + text if self.tty else text, end="\n" if end or not self.tty else "",
              file=sys.stderr, flush=True)

    def done(self):
        if self.show:
            self._print(end=True)
