"""What this machine charges for memory left alone, and the floor of a 1 kHz loop on it (issue
30, tails; fmu_src/runtime/loader/keep_warm.c).

    python benchmarks/page_idle.py [--mb 64] [--slots 4000]

1. Pages gone cold: a buffer of ``--mb`` MB is written, left alone for T seconds while this
   thread spins (the CPU stays busy), then one byte of each page is read again; printed: the
   cost per page.  Then, after the same idle time, the second cache line of each page read
   after its first (the cost is the page's or the line's?), and the pages read after another
   thread touched each of them through ``process_vm_readv`` on this process (a touch by
   another thread, as keep_warm.c's: does that warm them for this thread?).
2. The loop's floor: a slot of 1 ms wall clock, a few microseconds of trivial work in each
   (three system calls); printed: the thread's CPU time per slot, median / p99 / max, and the
   slots over 50 us.  Work that takes 4 us and sometimes 150-200 us is the machine's (the
   virtual CPU held elsewhere), not the FMU's.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import threading
import time

import numpy as np

PAGE = os.sysconf("SC_PAGE_SIZE")


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _touch(a, offset: int = 0) -> float:
    """Seconds to read one float of each page of ``a`` (at ``offset`` floats into the page)."""
    idx = np.arange(offset, a.size, PAGE // 8)
    t = time.perf_counter()
    a[idx].sum()
    return time.perf_counter() - t


def _warm_from_another_thread(a) -> None:
    """One byte of each page of ``a`` read by another thread with process_vm_readv."""
    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.process_vm_readv
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(_Iovec), ctypes.c_ulong,
                   ctypes.POINTER(_Iovec), ctypes.c_ulong, ctypes.c_ulong]
    base, pages = a.ctypes.data, a.nbytes // PAGE
    sink = ctypes.create_string_buffer(1024)
    local = (_Iovec * 1)(_Iovec(ctypes.addressof(sink), 1024))
    batches = []
    for start in range(0, pages, 1024):
        n = min(1024, pages - start)
        batches.append(((_Iovec * n)(*[_Iovec(base + (start + i) * PAGE, 1)
                                      for i in range(n)]), n))

    def run():
        for remote, n in batches:
            fn(os.getpid(), local, 1, remote, n, 0)
    th = threading.Thread(target=run)
    th.start()
    th.join()


def pages_gone_cold(mb: int) -> None:
    a = np.ones((mb << 20) // 8)
    pages = a.nbytes // PAGE
    print(f"1. {pages} pages ({mb} MB) written, left alone T s, read again (us per page)")
    print(f"{'T (s)':>6} {'first read':>11} {'2nd line':>9} {'warmed by another thread':>25}")
    for idle in (0.01, 0.3, 1.0, 2.0, 4.0):
        a.sum()
        _spin(idle)
        first = _touch(a)
        second = _touch(a, 8)
        a.sum()
        _spin(idle)
        _warm_from_another_thread(a)
        warmed = _touch(a, 8)
        print(f"{idle:6.2f} {first / pages * 1e6:11.3f} {second / pages * 1e6:9.3f} "
              f"{warmed / pages * 1e6:25.3f}")


def loop_floor(slots: int) -> None:
    libc = ctypes.CDLL(None)
    cpu = np.zeros(slots)
    t0 = time.perf_counter() + 0.01
    for k in range(slots):
        while time.perf_counter() < t0 + k * 1e-3:
            pass
        c0 = time.thread_time_ns()
        for _ in range(3):
            libc.getpid()
        cpu[k] = (time.thread_time_ns() - c0) / 1e3
    print(f"2. {slots} slots of 1 ms, trivial work in each: thread CPU us median "
          f"{np.median(cpu):.1f}, p99 {np.percentile(cpu, 99):.1f}, max {cpu.max():.1f}; "
          f"slots over 50 us: {int((cpu > 50).sum())} ({(cpu > 50).mean() * 100:.2f} %)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--slots", type=int, default=4000)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    pages_gone_cold(a.mb)
    loop_floor(a.slots)


if __name__ == "__main__":
    main()
