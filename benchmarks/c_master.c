/* A minimal C co-simulation master for benchmarks/bench_masters.py: loads an extracted FMU's
 * binary in a process without Python, and prints the time from fmi2Instantiate to the end of
 * the first fmi2DoStep and the median and p99 of the following doSteps (each with an fmi2GetReal
 * of the outputs given), and how many doSteps the loader ran without Python, as JSON.
 *   c_master DIR MODEL GUID STEPS H [VR ...] */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <time.h>

#include "c_master.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 6) { fprintf(stderr, "usage: c_master DIR MODEL GUID STEPS H [VR ...]\n"); return 2; }
    char path[4096], uri[4096];
    snprintf(path, sizeof path, "%s/binaries/linux64/%s.so", argv[1], argv[2]);
    snprintf(uri, sizeof uri, "file://%s/resources", argv[1]);
    int steps = atoi(argv[4]);
    double hstep = atof(argv[5]);
    size_t nvr = (size_t)(argc - 6);
    fmi2ValueReference *vr = calloc(nvr + 1, sizeof *vr);
    fmi2Real *val = calloc(nvr + 1, sizeof *val);
    for (size_t i = 0; i < nvr; i++) vr[i] = (fmi2ValueReference)atoi(argv[6 + i]);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    GET(Instantiate) GET(SetupExperiment) GET(EnterInitializationMode)
    GET(ExitInitializationMode) GET(DoStep) GET(GetReal) GET(Terminate) GET(FreeInstance)
    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    double t0 = now();
    fmi2Component c = Instantiate("bench", fmi2CoSimulation, argv[3], uri, &cb, fmi2False,
                                  fmi2False);
    if (!c) return 3;
    if (SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0) > fmi2Warning ||
        EnterInitializationMode(c) > fmi2Warning || ExitInitializationMode(c) > fmi2Warning)
        return 4;
    if (DoStep(c, 0.0, hstep, fmi2True) > fmi2Warning) return 5;
    double startup = now() - t0;
    double *dt = calloc((size_t)steps, sizeof *dt);
    for (int k = 1; k < steps; k++) {
        double a = now();
        if (DoStep(c, k * hstep, hstep, fmi2True) > fmi2Warning) return 6;
        if (nvr && GetReal(c, vr, nvr, val) > fmi2Warning) return 7;
        dt[k - 1] = now() - a;
    }
    qsort(dt, (size_t)(steps - 1), sizeof *dt, cmp);
    /* the doSteps the loader ran without Python (fmu_src/runtime/loader/fast_step.c) */
    long (*fast_steps)(fmi2Component) = (long (*)(fmi2Component))dlsym(h, "embed_fast_steps");
    printf("{\"startup_s\": %.6f, \"median_us\": %.2f, \"p99_us\": %.2f, "
           "\"fast_steps\": %ld}\n", startup, 1e6 * dt[(steps - 1) / 2],
           1e6 * dt[(int)(0.99 * (steps - 1))], fast_steps ? fast_steps(c) : -1L);
    Terminate(c);
    FreeInstance(c);
    return 0;
}
