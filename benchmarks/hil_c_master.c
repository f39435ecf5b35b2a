/* The 1 kHz wall-clock loop of benchmarks/hil_loop.py (``run``) in a C master, a rig's: no
 * Python in the process but the FMU's own (benchmarks/hil_fences.py --master c).  The same
 * cycle: the scheduled inputs, fmi2DoStep (timed: wall, the thread's CPU time and its time on
 * the run queue, /proc/thread-self/schedstat), fmi2GetReal and fmi2GetInteger of the outputs;
 * the master spins between cycles (with HIL_PACE=sleep: sleeps until 0.2 ms before each, then
 * spins, as hil_loop.run), pinned to the CPU it started on before it instantiates, as
 * docs/fmu.md asks of a rig (the FMU's helper threads then keep off that CPU).
 *   hil_c_master DIR MODEL GUID SECONDS NREAL NINT VR_REAL... VR_INT... [SET...]
 * SET: "r VR X", "b VR 0|1", "s VR TEXT" before initialization; "@K i VR N", "@K s VR TEXT"
 * before cycle K's doStep.  Prints, after the run (a reader woken in the loop would share the
 * master's core), "step K WALL_US CPU_US QUEUE_US SYS_US MINFLT CSW" per cycle (the last three
 * from getrusage(RUSAGE_THREAD) around the doStep: its system CPU time, tick-sampled, its minor
 * page faults and context switches), "row T INTS... REALS... WALL_US" when an integer output
 * changed, then "end MISSES INTS... REALS...".  With HIL_MARK=PATH (ftrace's trace_marker,
 * trace_clock mono) each doStep over 1 ms writes "slow K START END WALL_US CPU_US" there, its
 * CLOCK_MONOTONIC times in seconds, to find it in a trace. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "c_master.h"

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double queued_s(int fd)         /* schedstat's second field: ns on the run queue */
{
    char buf[96];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *p = strchr(buf, ' ');
    return p ? 1e-9 * strtod(p + 1, NULL) : 0;
}

static struct rusage usage(void)      /* this thread's: system time, faults, switches */
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: hil_c_master DIR MODEL GUID SECONDS NREAL NINT VR... [SET...]\n");
        return 2;
    }
    char path[4096], uri[4096];
    snprintf(path, sizeof path, "%s/binaries/linux64/%s.so", argv[1], argv[2]);
    snprintf(uri, sizeof uri, "file://%s/resources", argv[1]);
    int n = (int)(atof(argv[4]) * 1000 + 0.5), nr = atoi(argv[5]), ni = atoi(argv[6]);
    int a = 7 + nr + ni;
    if (a > argc || nr < 0 || ni < 0 || nr > 16 || ni > 16) return 2;
    fmi2ValueReference vr_r[16], vr_i[16];
    fmi2Real real[16] = {0};
    fmi2Integer ints[16] = {0}, last[16];
    for (int i = 0; i < nr; i++) vr_r[i] = (fmi2ValueReference)atoi(argv[7 + i]);
    for (int i = 0; i < ni; i++) vr_i[i] = (fmi2ValueReference)atoi(argv[7 + nr + i]);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof one, &one);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    GET(Instantiate) GET(SetupExperiment) GET(EnterInitializationMode)
    GET(ExitInitializationMode) GET(DoStep) GET(GetReal) GET(GetInteger) GET(SetReal)
    GET(SetInteger) GET(SetBoolean) GET(SetString) GET(Terminate) GET(FreeInstance)
    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component c = Instantiate("hil", fmi2CoSimulation, argv[3], uri, &cb, fmi2False,
                                  fmi2False);
    if (!c || SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0) > fmi2Warning) return 3;
    /* the settings: before initializing ("r", "b", "s"), or at cycle K ("@K", kept for it) */
    int act_k[64], act_i[64], nact = 0;
    for (int i = a; i + 2 < argc; i += 3) {
        if (argv[i][0] == '@') {
            if (i + 3 >= argc || nact == 64) return 2;
            act_k[nact] = atoi(argv[i] + 1), act_i[nact++] = ++i;      /* kind VR value */
            continue;
        }
        fmi2ValueReference vr = (fmi2ValueReference)atoi(argv[i + 1]);
        fmi2Status s = fmi2Error;
        if (!strcmp(argv[i], "r")) { fmi2Real x = atof(argv[i + 2]); s = SetReal(c, &vr, 1, &x); }
        if (!strcmp(argv[i], "b")) {
            fmi2Boolean x = atoi(argv[i + 2]);
            s = SetBoolean(c, &vr, 1, &x);
        }
        if (!strcmp(argv[i], "s")) { fmi2String x = argv[i + 2]; s = SetString(c, &vr, 1, &x); }
        if (s > fmi2Warning) return 4;
    }
    if (EnterInitializationMode(c) > fmi2Warning || ExitInitializationMode(c) > fmi2Warning)
        return 4;
    int stat = open("/proc/thread-self/schedstat", O_RDONLY);
    const char *pace = getenv("HIL_PACE");
    int sleeps = pace && !strcmp(pace, "sleep");
    int mark = getenv("HIL_MARK") ? open(getenv("HIL_MARK"), O_WRONLY) : -1;
    GetInteger(c, vr_i, (size_t)ni, last);
    const double dt = 1e-3, t0 = clock_s(CLOCK_MONOTONIC) + 0.01;
    int misses = 0, nrows = 0;
    double *wall = calloc((size_t)n, sizeof *wall), *cpus = calloc((size_t)n, sizeof *cpus);
    double *queue = calloc((size_t)n, sizeof *queue), *sys = calloc((size_t)n, sizeof *sys);
    long *flt = calloc((size_t)n, sizeof *flt), *csw = calloc((size_t)n, sizeof *csw);
    size_t rows_size = 1 << 16, rows_at = 0;
    char *rows = malloc(rows_size);
    if (!wall || !cpus || !queue || !sys || !flt || !csw || !rows) return 2;
    for (int k = 0; k < n; k++) {
        double slot = t0 + k * dt, wake = slot - 2e-4;
        if (sleeps && clock_s(CLOCK_MONOTONIC) < wake) {  /* the core given up until then */
            struct timespec w = {(time_t)wake, (long)((wake - (time_t)wake) * 1e9)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &w, NULL);
        }
        while (clock_s(CLOCK_MONOTONIC) < slot) {}       /* spin to this millisecond */
        for (int j = 0; j < nact; j++) {                 /* this cycle's inputs */
            if (act_k[j] != k) continue;
            char **v = argv + act_i[j];                   /* kind VR value */
            fmi2ValueReference vr = (fmi2ValueReference)atoi(v[1]);
            if (!strcmp(v[0], "i")) {
                fmi2Integer x = atoi(v[2]);
                SetInteger(c, &vr, 1, &x);
            } else {
                fmi2String x = v[2];
                SetString(c, &vr, 1, &x);
            }
        }
        struct rusage u0 = usage();
        double q0 = queued_s(stat), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        double m = clock_s(CLOCK_MONOTONIC);
        if (DoStep(c, k * dt, dt, fmi2True) > fmi2Warning) return 5;
        double d = clock_s(CLOCK_MONOTONIC);
        double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0, q = queued_s(stat) - q0;
        struct rusage u1 = usage();
        sys[k] = 1e6 * (u1.ru_stime.tv_sec - u0.ru_stime.tv_sec)
                 + (u1.ru_stime.tv_usec - u0.ru_stime.tv_usec);
        flt[k] = u1.ru_minflt - u0.ru_minflt + u1.ru_majflt - u0.ru_majflt;
        csw[k] = u1.ru_nvcsw - u0.ru_nvcsw + u1.ru_nivcsw - u0.ru_nivcsw;
        GetReal(c, vr_r, (size_t)nr, real);
        GetInteger(c, vr_i, (size_t)ni, ints);
        if (clock_s(CLOCK_MONOTONIC) > slot + dt) misses++;
        wall[k] = 1e6 * (d - m), cpus[k] = 1e6 * cpu, queue[k] = 1e6 * q;
        if (mark >= 0 && wall[k] > 1000)
            dprintf(mark, "slow %d %.6f %.6f %.0f %.0f\n", k, m, d, wall[k], cpus[k]);
        if (memcmp(ints, last, (size_t)ni * sizeof *ints) && nrows++ < 256
            && rows_at + 2048 < rows_size) {       /* (a row: at most 1,120 bytes) */
            rows_at += (size_t)snprintf(rows + rows_at, 64, "row %.6f", (k + 1) * dt);
            for (int i = 0; i < ni; i++)
                rows_at += (size_t)snprintf(rows + rows_at, 32, " %d", (int)ints[i]);
            for (int i = 0; i < nr; i++)
                rows_at += (size_t)snprintf(rows + rows_at, 32, " %.17g", real[i]);
            rows_at += (size_t)snprintf(rows + rows_at, 32, " %.3f\n", wall[k]);
        }
        memcpy(last, ints, (size_t)ni * sizeof *ints);
    }
    for (int k = 0; k < n; k++)
        printf("step %d %.3f %.3f %.3f %.0f %ld %ld\n", k, wall[k], cpus[k], queue[k], sys[k],
               flt[k], csw[k]);
    fwrite(rows, 1, rows_at, stdout);
    printf("end %d", misses);
    for (int i = 0; i < ni; i++) printf(" %d", (int)ints[i]);
    for (int i = 0; i < nr; i++) printf(" %.17g", real[i]);
    printf("\n");
    Terminate(c);
    FreeInstance(c);
    return 0;
}
