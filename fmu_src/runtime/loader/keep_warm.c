/* The stepping process's memory kept warm for a real-time run (issue 30, tails).
 *
 * On the virtual machines measured here (docs/design.md, "Pages gone cold"), a page nobody
 * touched for a second costs 0.3-1 us at its next touch on average (0.02-0.04 us warm),
 * 0.7-2.5 us after four seconds: 1-3 % of them about 130 us each, taken back by the host;
 * the cost is the page's, not the cache line's, and a touch from another thread warms it
 * for every core (benchmarks/page_idle.py).  A real-time run spends seconds in C
 * (fast_step.c) between events; the event's Python then touched thousands of cold pages: 4-11
 * ms of CPU in the step before a contact, where a warm step takes 0.5-0.9 ms.
 *
 * embed_keep_warm starts one thread per process (whatever the instances) that, every period,
 * reads /proc/self/maps and touches one byte of each page present in the process's page
 * tables (/proc/self/pagemap; else each resident page: mincore) of its readable private
 * memory, shared libraries and executable, without the GIL.  The kernel reads the bytes
 * for it (writev of one-byte pieces into a pipe of its own, then drained): a page unmapped
 * meanwhile by another thread is an error returned, never a crash.  A page not resident is
 * not touched (nothing is faulted in: the resident set does not grow).
 *
 * The thread is in the normal scheduling class and works in slices of SLICE pages (about 0.1
 * ms), pausing between them (a sweep of 11,000 pages: about 17 ms; of 19,000 by mincore:
 * 25-35 ms), and for as long as the gated loader thread runs a job (gil_gate.c; up to 20
 * ms).  Not the idle class:
 * the pagemap read (or mincore), and a read that finds a page gone since, hold the
 * address-space lock (mmap_lock); an idle-class thread preempted there under load waited
 * 0.1-0.94 s for a core, and every mmap and munmap of the process (the stepping thread's,
 * the loader's) waited with it
 * (tests/test_fence_storm.py's soak; first version, with process_vm_readv, the same).  A
 * normal-class thread gets its core back within a scheduler slice; the slices keep what it
 * takes from a shared core to about 0.1 ms.  The binary is pinned (RTLD_NODELETE) first: the
 * thread runs its code for the process's life, whether or not a master unloads the FMU. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "loader.h"

enum { SLICE = 256,                 /* pages read between pauses (and looked at per mincore) */
       PAUSE_US = 200,
       YIELD_MAX = 100 };            /* pauses while the loader works: 20 ms, then a slice */

static const char NAME[] = "embed-warm";

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int started;
static volatile int period_ms;
static volatile unsigned long sweeps, touched, failed, exe_pages;

static int pipe_fd[2] = {-1, -1};    /* the bytes read go through a pipe of this thread's */

static void pause_for(long us)
{
    struct timespec ts = {us / 1000000L, (us % 1000000L) * 1000L};
    nanosleep(&ts, NULL);
}

/* A pause between slices, longer while the loader thread works (gate_loader_working: it may
 * hold the GIL, and this thread, woken on its core, would preempt it there), at most
 * YIELD_MAX pauses of it. */
static void pause_slice(void)
{
    int n = 0;
    do pause_for(PAUSE_US); while (gate_loader_working() && ++n < YIELD_MAX);
}

/* The kernel reads one byte of each page in iov[0..n) (copied into the pipe by writev, a
 * plain user-memory load that fails with EFAULT, not a fault, where the page is gone), and
 * the pipe is drained. */
static unsigned long flush(struct iovec *iov, int n)
{
    static char sink[SLICE];
    ssize_t got = writev(pipe_fd[1], iov, n);
    if (got < n) failed++;
    if (got > 0 && read(pipe_fd[0], sink, (size_t)got) != got) failed++;
    touched += n;
    return (unsigned long)n;
}

/* Which pages of the slice [at, at + count pages) to touch, into in[]: those present in the
 * process's own page tables (/proc/self/pagemap's bit 63, readable unprivileged: pages this
 * process touched, or that the kernel mapped around one it touched), or, where that file
 * cannot be read, those resident at all (mincore: a shared library's pages in the page
 * cache count although this process never ran them: 5,574 of libopenblas's, 537 of them
 * its own, in an fmpy master stepping disk_fence).  0, or -1 if the slice went meanwhile. */
static int wanted(int pagemap, unsigned long at, unsigned long count, unsigned long page,
                  unsigned char in[SLICE])
{
    static unsigned long long entry[SLICE];
    size_t bytes = count * sizeof entry[0];
    if (pagemap >= 0 && pread(pagemap, entry, bytes, (off_t)(at / page * sizeof entry[0]))
            == (ssize_t)bytes) {
        for (unsigned long i = 0; i < count; i++) in[i] = (unsigned char)(entry[i] >> 63);
        return 0;
    }
    return mincore((void *)at, count * page, in) != 0 ? -1 : 0;
}

/* Touch (read one byte of) each wanted page of [lo, hi), a slice at a time: a pause once
 * SLICE pages were read since the last one (whatever the mappings they were in: a sweep of
 * 19,000 pages in 425 mappings pauses about 75 times, not 425). */
static unsigned long touch_range(int pagemap, unsigned long lo, unsigned long hi,
                                 unsigned long page)
{
    static unsigned char vec[SLICE];
    static struct iovec iov[SLICE];
    static int since_pause;
    unsigned long done = 0;
    for (unsigned long at = lo; at < hi; at += SLICE * page) {
        unsigned long len = hi - at;
        int n = 0;
        if (len > SLICE * page) len = SLICE * page;
        if (wanted(pagemap, at, len / page, page, vec) != 0) return done;   /* unmapped */
        for (unsigned long i = 0; i < len / page; i++) {
            if (!(vec[i] & 1)) continue;
            iov[n].iov_base = (void *)(at + i * page);
            iov[n++].iov_len = 1;
        }
        if (n) done += flush(iov, n);
        if ((since_pause += n) >= SLICE) {
            pause_slice();
            since_pause = 0;
        }
    }
    return done;
}

/* /proc/self/maps read whole into buf (size n), the file closed before any page is touched
 * (it was open through each sweep, a third of the time: a test counting the process's files
 * saw it come and go); its length, the last line cut where buf is full. */
static size_t read_maps(char *buf, size_t n)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    ssize_t got;
    if (fd < 0) return 0;
    while (len < n - 1 && (got = read(fd, buf + len, n - 1 - len)) > 0) len += (size_t)got;
    close(fd);
    if (len == n - 1) while (len && buf[len - 1] != '\n') len--;
    buf[len] = '\0';
    return len;
}

/* One sweep over the mappings worth keeping warm: readable, and anonymous (heap, arenas,
 * stacks, numpy's buffers, the engine's placed object code), a shared library's, or the
 * process's executable's (a Python linked with libpython, as Debian's and conda's are: the
 * interpreter is there, not in a .so). */
static void sweep(void)
{
    static char maps[1 << 19], exe[768];
    if (!exe[0] && readlink("/proc/self/exe", exe, sizeof exe - 1) < 0) exe[0] = '\0';
    if (!read_maps(maps, sizeof maps)) { failed++; return; }
    unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);
    int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);   /* (closed below) */
    for (char *line = maps, *end; *line; line = end + 1) {
        unsigned long lo, hi, inode;
        char perms[8], path[768] = "";
        if (!(end = strchr(line, '\n'))) break;
        *end = '\0';
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %767[^\n]", &lo, &hi, perms, &inode, path) < 4)
            continue;
        if (perms[0] != 'r' || perms[3] != 'p') continue;
        if (path[0] == '[' && strcmp(path, "[heap]") && strcmp(path, "[stack]") &&
            strncmp(path, "[anon", 5)) continue;                 /* [vvar], [vdso], ... */
        int own = exe[0] && strcmp(path, exe) == 0;
        if (inode && !own && !strstr(path, ".so")) continue;    /* a data file's pages */
        unsigned long n = touch_range(pagemap, lo, hi, page);
        if (own) exe_pages += n;
    }
    if (pagemap >= 0) close(pagemap);
    sweeps++;
}

static void *run(void *arg)
{
    (void)arg;
    /* at nice 0 or more: a thread takes the nice of the thread that made it, and at a rig's
     * stepping thread's nice -10 this one shared that core with it as an equal (preempting it
     * for whole slices); embed/base/helper_class.py does the same for the Python helpers */
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, tid);
    if (errno == 0 && nice < 0) setpriority(PRIO_PROCESS, tid, 0);
    for (;;) {
        pause_slice();                    /* (a sweep starts after the loader's job too) */
        sweep();
        pause_for(period_ms * 1000L);
    }
    return NULL;
}

/* Whether a thread named `name` runs in this process: another FMU's binary (each has its own
 * copy of this file's state) started its sweeper already, and one sweeps for all. */
static int thread_named(const char *name)
{
    DIR *tasks = opendir("/proc/self/task");
    struct dirent *t;
    int found = 0;
    if (!tasks) return 0;
    while (!found && (t = readdir(tasks))) {
        char path[64], comm[32] = "";
        if (t->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", t->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;                                  /* ended meanwhile */
        if (fgets(comm, sizeof comm, f)) {
            comm[strcspn(comm, "\n")] = '\0';
            found = strcmp(comm, name) == 0;
        }
        fclose(f);
    }
    closedir(tasks);
    return found;
}

/* This binary kept loaded for the process's life (RTLD_NODELETE): a thread runs its code
 * after the master's freeLibrary (here, and the loader thread's gate, gil_gate.c).  1, or 0. */
int pin_binary(void)
{
    Dl_info info;
    return dladdr((void *)pin_binary, &info) && info.dli_fname &&
           dlopen(info.dli_fname, RTLD_NOW | RTLD_NODELETE | RTLD_NOLOAD);
}

/* Start the thread (once a process, whatever the FMU binaries in it; a later call sets this
 * binary's period only): 0, or -1 where the binary could not be pinned or the thread not
 * started.  It is in the normal class whatever the master's thread is (a rig's real-time
 * class is not passed on). */
EXPORT int embed_keep_warm(int period)
{
    int rc = 0;
    pthread_mutex_lock(&lock);
    period_ms = period > 0 ? period : 30;
    if (!started && thread_named(NAME)) {
        started = 1;          /* another binary's thread sweeps this process, with its period */
    } else if (!started) {
        pthread_t th;
        pthread_attr_t attr;
        struct sched_param normal = {0};
        pthread_attr_init(&attr);
        pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
        pthread_attr_setschedparam(&attr, &normal);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pipe_fd[0] < 0 && pipe2(pipe_fd, O_CLOEXEC) != 0) pipe_fd[0] = pipe_fd[1] = -1;
        if (!pin_binary() || pipe_fd[0] < 0 || pthread_create(&th, &attr, run, NULL) != 0) {
            rc = -1;          /* (the pipe, if made, is kept for a later call) */
        } else {
            pthread_setname_np(th, NAME);
            started = 1;
        }
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* [sweeps, pages touched, failed reads, pages of the executable touched] so far (benchmarks,
 * tests). */
EXPORT void embed_keep_warm_stats(unsigned long out[4])
{
    out[0] = sweeps;
    out[1] = touched;
    out[2] = failed;
    out[3] = exe_pages;
}
