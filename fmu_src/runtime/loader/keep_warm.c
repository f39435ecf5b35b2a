/* The stepping process's memory kept warm for a real-time run (issue 30, tails).
 *
 * On the virtual machines measured here (docs/design.md, "Pages gone cold"), a page nobody
 * touched for a second costs 0.3-1 us at its next touch (0.02-0.04 us warm), 0.7-2.5 us after
 * four seconds; the cost is the page's, not the cache line's, and a touch from another thread
 * warms it for every core (benchmarks/page_idle.py).  A real-time run spends seconds in C
 * (fast_step.c) between events; the event's Python then touched thousands of cold pages: 4-11
 * ms of CPU in the step before a contact, where a warm step takes 0.5-0.9 ms.
 *
 * embed_keep_warm starts one thread per process (whatever the instances) that, every period,
 * reads /proc/self/maps and touches one byte of each resident page (mincore) of the process's
 * readable private memory and shared libraries: without the GIL, in the idle scheduling class
 * (on a core with nothing else to run).  It reads
 * with process_vm_readv on its own process, so that a page unmapped meanwhile by another thread
 * is an error returned, never a fault; a page not resident is not touched (nothing is faulted
 * in: the resident set does not grow).  The binary is pinned (RTLD_NODELETE) first: the thread
 * runs its code for the process's life, whether or not a master unloads the FMU. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "loader.h"

enum { BATCH = 1024 };              /* IOV_MAX: remote reads per process_vm_readv call */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int started;
static volatile int period_ms;
static volatile unsigned long sweeps, touched, failed;

/* Touch (read one byte of) each resident page of [lo, hi). */
static void touch_range(unsigned long lo, unsigned long hi, long page, pid_t pid)
{
    static unsigned char vec[4096];
    static struct iovec remote[BATCH];
    static char sink[BATCH];
    struct iovec local = {sink, sizeof sink};
    int n = 0;
    for (unsigned long at = lo; at < hi; at += sizeof vec * (unsigned long)page) {
        unsigned long len = hi - at;
        if (len > sizeof vec * (unsigned long)page) len = sizeof vec * (unsigned long)page;
        if (mincore((void *)at, len, vec) != 0) return;        /* unmapped meanwhile */
        for (unsigned long i = 0; i < len / (unsigned long)page; i++) {
            if (!(vec[i] & 1)) continue;
            remote[n].iov_base = (void *)(at + i * (unsigned long)page);
            remote[n].iov_len = 1;
            if (++n == BATCH) {
                if (process_vm_readv(pid, &local, 1, remote, n, 0) < 0) failed++;
                touched += n;
                n = 0;
            }
        }
    }
    if (n) {
        if (process_vm_readv(pid, &local, 1, remote, n, 0) < 0) failed++;
        touched += n;
    }
}

/* One sweep over the mappings worth keeping warm: readable, and anonymous (heap, arenas,
 * stacks, numpy's buffers, the engine's placed object code) or a shared library's. */
static void sweep(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) { failed++; return; }
    long page = sysconf(_SC_PAGESIZE);
    pid_t pid = getpid();
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, inode;
        char perms[8], path[768] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %767[^\n]", &lo, &hi, perms, &inode, path) < 4)
            continue;
        if (perms[0] != 'r' || perms[3] != 'p') continue;
        if (path[0] == '[' && strcmp(path, "[heap]") && strcmp(path, "[stack]") &&
            strncmp(path, "[anon", 5)) continue;                 /* [vvar], [vdso], ... */
        if (inode && !strstr(path, ".so")) continue;            /* a data file's pages */
        touch_range(lo, hi, page, pid);
    }
    fclose(f);
    sweeps++;
}

static void *run(void *arg)
{
    (void)arg;
    /* the idle class: it runs where a core would idle, never in the stepping thread's turn */
    struct sched_param idle = {0};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
    for (;;) {
        sweep();
        struct timespec ts = {period_ms / 1000, (long)(period_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* Start the thread (once a process; a later call sets the period only): 0, or -1 where the
 * binary could not be pinned or the thread not started. */
EXPORT int embed_keep_warm(int period)
{
    int rc = 0;
    pthread_mutex_lock(&lock);
    period_ms = period > 0 ? period : 100;
    if (!started) {
        Dl_info info;
        pthread_t th;
        if (!dladdr((void *)embed_keep_warm, &info) || !info.dli_fname ||
            !dlopen(info.dli_fname, RTLD_NOW | RTLD_NODELETE | RTLD_NOLOAD) ||
            pthread_create(&th, NULL, run, NULL) != 0) {
            rc = -1;
        } else {
            pthread_setname_np(th, "embed-warm");
            pthread_detach(th);
            started = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* [sweeps, pages touched, failed reads] so far (benchmarks, tests). */
EXPORT void embed_keep_warm_stats(unsigned long out[3])
{
    out[0] = sweeps;
    out[1] = touched;
    out[2] = failed;
}
