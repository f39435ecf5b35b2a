/* The loader thread gives the GIL way to FMI calls (issue 30, tails).
 *
 * A real-time run's loader thread (embed/codegen/loader_thread.py) runs Python while the
 * stepping thread waits for the master's next millisecond: placing a fence's object code,
 * preparing its terms.  A doStep that comes meanwhile waits for the GIL: CPython makes it wait
 * the switch interval before it asks the holder to drop it, then for the holder to notice, then
 * for its own wake-up, and every compiled call or pipe read in the step that drops the GIL
 * starts that again (traced: 0.4-0.5 ms each, a step of 1.0-1.3 ms).  Here every FMI call of
 * the process counts itself in `busy` before it enters Python and out when it is done
 * (loader.h, BEGIN and END; fmi2DoStep's C steps too), and the loader thread runs with a C
 * profile function (PyEval_SetProfile, `embed_gil_gate`) that, at each Python call or return
 * while an FMI call is under way, drops the GIL and waits until none is: the FMI call takes
 * the GIL within microseconds of asking, and no switch interval runs out in a step.  The wait
 * ends `QUIET_NS` after the last call returned (a master's getReal after its doStep comes
 * within that), and after `MAX_WAIT_NS` at most, after which the loader runs on for
 * `RUN_NS` ungated: a master that calls without pause still lets the loader's work through.
 * A step that must wait for a lock the gated loader holds (the engine's, SharedLock) leaves
 * the count while it waits (`embed_gate_pause`): the loader goes on and releases it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "loader.h"

#define QUIET_NS 50000L          /* the FMI calls of one cycle: doStep, getReal, getInteger */
#define MAX_WAIT_NS 2000000L     /* a master's calls without pause: the loader goes on after */
#define RUN_NS 200000L           /* ... this long, then gives way again */

static int busy;                 /* FMI calls under way in this process */
static int waiting;              /* the loader thread waits on `busy` */
static __thread int depth;       /* this thread's */

void gate_enter(void)
{
    depth++;
    __atomic_add_fetch(&busy, 1, __ATOMIC_SEQ_CST);
}

void gate_leave(void)
{
    depth--;
    if (__atomic_sub_fetch(&busy, 1, __ATOMIC_SEQ_CST) == 0
        && __atomic_load_n(&waiting, __ATOMIC_SEQ_CST))
        syscall(SYS_futex, &busy, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* A thread in an FMI call about to wait for a lock the loader thread may hold (the
 * engine's locks, embed/codegen/loader_thread.SharedLock) is out of the count while it waits:
 * the gated loader goes on to release it.  1 if it was in one (then embed_gate_resume after
 * the wait), else 0. */
EXPORT int embed_gate_pause(void)
{
    if (depth <= 0) return 0;
    gate_leave();
    return 1;
}

EXPORT void embed_gate_resume(void) { gate_enter(); }

static long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Wait (without the GIL) until no FMI call has been under way for QUIET_NS, or MAX_WAIT_NS
 * have passed; returns when the wait ended. */
static long wait_quiet(void)
{
    long start = now_ns(), t = start;
    __atomic_store_n(&waiting, 1, __ATOMIC_SEQ_CST);
    while (t - start < MAX_WAIT_NS) {
        int b = __atomic_load_n(&busy, __ATOMIC_SEQ_CST);
        if (b > 0) {
            struct timespec left = {0, MAX_WAIT_NS - (t - start)};
            syscall(SYS_futex, &busy, FUTEX_WAIT_PRIVATE, b, &left, NULL, 0);
        } else {
            struct timespec quiet = {0, QUIET_NS};
            nanosleep(&quiet, NULL);
            if (__atomic_load_n(&busy, __ATOMIC_SEQ_CST) == 0) break;
        }
        t = now_ns();
    }
    __atomic_store_n(&waiting, 0, __ATOMIC_SEQ_CST);
    return now_ns();
}

static const int *hold;          /* the loader thread's own bookkeeping (loader_thread.HOLD) */
static const int *working;       /* ... nonzero while it runs a job (loader_thread.WORKING) */
static void *(*save_thread)(void);
static void (*restore_thread)(void *);
static long run_until;           /* the loader thread's: ungated until then (after MAX_WAIT) */

static int gate(void *obj, void *frame, int what, void *arg)
{
    (void)obj, (void)frame, (void)what, (void)arg;
    if (__atomic_load_n(&busy, __ATOMIC_RELAXED) == 0) return 0;
    if (*(const volatile int *)hold > 0) return 0;     /* (a Done being set: goes on) */
    long t = now_ns();
    if (t < run_until) return 0;
    void *ts = save_thread();
    long end = wait_quiet();
    restore_thread(ts);
    if (end - t >= MAX_WAIT_NS) run_until = end + RUN_NS;
    return 0;
}

/* Whether the loader thread runs a job (of a gated one; else 0): the page-warming thread
 * (keep_warm.c) pauses meanwhile.  Woken on the loader's core, it preempted the loader while
 * that held the GIL, and a step waited the 0.7 ms of its slice (traced). */
int gate_loader_working(void)
{
    return working && *(const volatile int *)working;
}

/* Called by the loader thread, holding the GIL (ctypes PYFUNCTYPE): the gate becomes its
 * profile function (PyEval_SetProfile, for this thread only), and its timer slack 1 us (the
 * QUIET_NS sleep, not 50 us more).  `held`: nonzero while it sets a Done, whose lock a
 * waiting thread takes (the gate does not wait there); `busy_job`: nonzero while it runs a
 * job (``gate_loader_working``).  1, or 0 where the Python C API lacks what it needs or the
 * binary could not be pinned. */
EXPORT int embed_gil_gate(const int *held, const int *busy_job)
{
    if (!held || !busy_job || !pin_binary()) return 0;   /* (it runs after freeLibrary) */
    hold = held;
    working = busy_job;
    void (*set_profile)(void *, void *) =
        (void (*)(void *, void *))dlsym(RTLD_DEFAULT, "PyEval_SetProfile");
    save_thread = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
    restore_thread = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyEval_RestoreThread");
    if (!set_profile || !save_thread || !restore_thread) return 0;
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    set_profile((void *)gate, NULL);
    return 1;
}
