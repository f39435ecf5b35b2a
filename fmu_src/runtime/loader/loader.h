/* Shared by the loader's files (compiled together by fmu_src/build.py into the FMU's binary):
 *   fmi2_loader.c   the fmi2 functions: instances, argument checks, FMU states, status;
 *   python_env.c    the Python interpreter and pythonfmu's binary, loaded on first use;
 *   resource_uri.c  fmuResourceLocation (a file: URI) decoded to a folder. */
#ifndef EMBED_LOADER_H
#define EMBED_LOADER_H

#include <stddef.h>

#include "fmi2Functions.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- pythonfmu's binary (python_env.c) ----------------------------------------------------- */

#define FMI2_FUNCS(X) X(Instantiate) X(FreeInstance) X(SetDebugLogging) X(SetupExperiment) \
    X(EnterInitializationMode) X(ExitInitializationMode) X(Terminate) X(Reset) \
    X(GetReal) X(GetInteger) X(GetBoolean) X(GetString) \
    X(SetReal) X(SetInteger) X(SetBoolean) X(SetString) \
    X(GetFMUstate) X(SetFMUstate) X(FreeFMUstate) X(SerializedFMUstateSize) \
    X(SerializeFMUstate) X(DeSerializeFMUstate) X(GetDirectionalDerivative) \
    X(SetRealInputDerivatives) X(GetRealOutputDerivatives) X(DoStep)

typedef struct {
#define FIELD(n) fmi2##n##TYPE *n;
    FMI2_FUNCS(FIELD)
#undef FIELD
    void (*finalize)(void);
    void *handle;
} Backend;

extern Backend B;

/* The Python C API initialized (the process's own interpreter, or one started from the
 * interpreter whose packages requirements.txt names) and pythonfmu's binary loaded: 1, or 0
 * with a message in err.  Thread-safe. */
int python_and_backend(const char *requirements, char *err, size_t n);

/* The interpreter started by python_and_backend, for messages ("of this process" if none). */
const char *started_python(void);

/* ---- fmuResourceLocation (resource_uri.c) ------------------------------------------------- */

/* The folder the file: URI `uri` names, percent-decoded, in out[n]: 1, or 0 with err set. */
int resource_folder(const char *uri, char *out, size_t n, char *err, size_t en);

/* pythonfmu's binary turns every "%20" of the path it is given into a space; a folder whose
 * name has "%20" in it is reached through a symbolic link in a private temporary folder:
 * path rewritten in place, *tmpdir (malloc'ed) to remove with remove_alias.  1, or 0 with
 * err set. */
int alias_if_needed(char *path, size_t n, char **tmpdir, char *err, size_t en);
void remove_alias(char *tmpdir);

#endif
