/* What the benchmarks' C masters share (c_master.c, hil_c_master.c): the FMI 2.0 logger they
 * hand the FMU (every message to stderr) and GET, an fmi2 function looked up in the binary
 * `h` (main returns 2 where it is missing). */
#ifndef EMBED_BENCH_C_MASTER_H
#define EMBED_BENCH_C_MASTER_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>

#include "fmi2Functions.h"

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status s,
                   fmi2String cat, fmi2String msg, ...)
{
    (void)env;
    va_list ap;
    va_start(ap, msg);
    fprintf(stderr, "[%s %d %s] ", name, (int)s, cat);
    vfprintf(stderr, msg, ap);
    fputc('\n', stderr);
    va_end(ap);
}

#define GET(name) fmi2##name##TYPE *name = (fmi2##name##TYPE *)dlsym(h, "fmi2" #name); \
    if (!name) { fprintf(stderr, "no fmi2" #name "\n"); return 2; }

#endif
