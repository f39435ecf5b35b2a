/* The machine's own floor for a 1 kHz loop, without Python or the FMU (issue 30, tails): a slot
 * of 1 ms of wall clock, trivial work in each (three system calls and `work` additions);
 * printed: the wall and thread CPU time of that work per slot, median / p99 / max, the
 * slots over 50 us, and the slots over 1 ms (wall; of them, thread CPU over 1 ms).  Wall far
 * over CPU: the thread was off its core (run it under `chrt -f 50` to keep other processes
 * off: what remains is the machine's).
 *
 *     cc -O2 -o /tmp/slot_floor benchmarks/slot_floor.c && /tmp/slot_floor [slots] [work]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 5000, work = argc > 2 ? atoi(argv[2]) : 0, over = 0;
    int over_ms = 0, cpu_ms = 0;
    double *w = malloc(n * sizeof *w), *c = malloc(n * sizeof *c), t0 = now(CLOCK_MONOTONIC);
    volatile double s = 0;
    for (int k = 0; k < n; k++) {
        while (now(CLOCK_MONOTONIC) < t0 + k * 1000.0)
            ;
        double a = now(CLOCK_MONOTONIC), b = now(CLOCK_THREAD_CPUTIME_ID);
        getppid(); getppid(); getppid();
        for (int i = 0; i < work; i++) s += i * 0.5;
        c[k] = now(CLOCK_THREAD_CPUTIME_ID) - b;
        w[k] = now(CLOCK_MONOTONIC) - a;
        over += w[k] > 50;
        over_ms += w[k] > 1000;
        cpu_ms += c[k] > 1000;
    }
    qsort(w, n, sizeof *w, cmp);
    qsort(c, n, sizeof *c, cmp);
    printf("%d slots of 1 ms: wall us p50 %.1f p99 %.1f max %.1f, over 50 us %d (%.2f %%); "
           "thread CPU us p50 %.1f p99 %.1f max %.1f; over 1 ms %d (of thread CPU %d)\n", n,
           w[n / 2], w[n * 99 / 100], w[n - 1], over, 100.0 * over / n, c[n / 2],
           c[n * 99 / 100], c[n - 1], over_ms, cpu_ms);
    return 0;
}
