/* The FMU's binary: loads a Python interpreter when the process has none, then forwards every
 * fmi2 function to pythonfmu's binary, shipped beside this file as <modelIdentifier>_pythonfmu.so.
 *
 * Why (README "Which Python", DESIGN.md): pythonfmu's binary leaves the Python C API unresolved,
 * so a C or C++ master cannot load it; its unload destructor releases a static shared_ptr that the
 * C++ runtime already destroyed at exit; it drops error messages when the master turned logging
 * off, passes NULL categories, and has no status override.  This file fixes all of that from the
 * outside.  Built by build_fmu.py with the machine's C compiler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmi2Functions.h"

#ifndef EMBED_BUILD_PYTHON
#define EMBED_BUILD_PYTHON ""
#endif
#ifndef EMBED_GUID                 /* the modelDescription's guid, given by build_fmu.py */
#error "compile with -DEMBED_GUID=\"<guid of modelDescription.xml>\""
#endif
#define EXPORT __attribute__((visibility("default")))

extern char **environ;

/* ---- pythonfmu's binary ------------------------------------------------------------------ */

#define FMI2_FUNCS(X) X(Instantiate) X(FreeInstance) X(SetDebugLogging) X(SetupExperiment) \
    X(EnterInitializationMode) X(ExitInitializationMode) X(Terminate) X(Reset) \
    X(GetReal) X(GetInteger) X(GetBoolean) X(GetString) \
    X(SetReal) X(SetInteger) X(SetBoolean) X(SetString) \
    X(GetFMUstate) X(SetFMUstate) X(FreeFMUstate) X(SerializedFMUstateSize) \
    X(SerializeFMUstate) X(DeSerializeFMUstate) X(GetDirectionalDerivative) \
    X(SetRealInputDerivatives) X(GetRealOutputDerivatives) X(DoStep)

static struct {
#define FIELD(n) fmi2##n##TYPE *n;
    FMI2_FUNCS(FIELD)
#undef FIELD
    void (*finalize)(void);
    void *handle;
} B;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* pythonfmu's exit-time bug: its static shared_ptr<PyState> is destroyed by the C++ runtime's
 * exit handler, then its ELF destructor assigns to it again (double release; valgrind: invalid
 * read in finalizePythonInterpreter).  Releasing it first, from a handler registered after
 * pythonfmu's (so run before it), leaves both of them an empty pointer. */
static void release_pystate(void)
{
    if (B.finalize) B.finalize();
}

static int load_backend(char *err, size_t n)
{
    if (B.handle) return 1;
    Dl_info info;
    if (!dladdr((void *)&load_backend, &info) || !info.dli_fname) {
        snprintf(err, n, "cannot locate the FMU's own binary (dladdr)");
        return 0;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", info.dli_fname);
    char *dot = strrchr(path, '.');
    if (!dot) dot = path + strlen(path);
    snprintf(dot, sizeof path - (size_t)(dot - path), "_pythonfmu.so");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, n, "cannot load pythonfmu's binary: %s", dlerror());
        return 0;
    }
#define LOAD(f) B.f = (fmi2##f##TYPE *)dlsym(h, "fmi2" #f); \
    if (!B.f) { snprintf(err, n, "%s lacks fmi2" #f, path); return 0; }
    FMI2_FUNCS(LOAD)
#undef LOAD
    B.finalize = (void (*)(void))dlsym(h, "finalizePythonInterpreter");
    B.handle = h;
    atexit(release_pystate);
    return 1;
}

/* ---- the interpreter ------------------------------------------------------------------------ */

/* Run `python -c QUERY`: libpython, executable, prefix, base prefix, sys.path, missing packages. */
static const char *QUERY =
    "import sys, os, sysconfig, importlib.util as u\n"
    "v = sysconfig.get_config_var\n"
    "d = v('LIBDIR') or ''\n"
    "lib = next((os.path.join(d, n) for n in (v('INSTSONAME'), v('LDLIBRARY'))\n"
    "            if n and n.endswith(tuple('.so.%d.0' % i for i in range(9)) + ('.so',))\n"
    "            and os.path.exists(os.path.join(d, n))), '')\n"
    "req = [l.split(';')[0].strip() for l in open(sys.argv[1])] if len(sys.argv) > 1 else []\n"
    "req = [r.split('>')[0].split('=')[0].split('<')[0].split('[')[0].strip() for r in req]\n"
    "miss = [r for r in req if r and u.find_spec(r) is None]\n"
    "print(lib); print(sys.executable); print(sys.prefix); print(sys.base_prefix)\n"
    "print(os.pathsep.join(p for p in sys.path if p)); print(' '.join(miss))\n";

static struct {
    int done;
    char python[PATH_MAX];          /* what was run */
    char lines[6][8192];            /* the answers, in QUERY's order */
} Q;

static int run_query(const char *python, const char *requirements, char *err, size_t n)
{
    int fd[2];
    if (pipe(fd)) { snprintf(err, n, "pipe: %s", strerror(errno)); return 0; }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    char *argv[] = {(char *)python, "-c", (char *)QUERY, (char *)requirements, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, python, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc) {
        close(fd[0]);
        snprintf(err, n, "cannot run the Python interpreter '%s': %s", python, strerror(rc));
        return 0;
    }
    static char buf[6 * 8192];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof buf - 1 && (r = read(fd[0], buf + len, sizeof buf - 1 - len)) != 0) {
        if (r < 0) { if (errno == EINTR) continue; break; }
        len += (size_t)r;
    }
    buf[len] = 0;
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, n, "the Python interpreter '%s' failed to start (exit status %d)", python,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return 0;
    }
    char *p = buf;
    for (int i = 0; i < 6; i++) {
        char *e = strchr(p, '\n');
        if (!e) { snprintf(err, n, "unexpected answer from '%s'", python); return 0; }
        *e = 0;
        snprintf(Q.lines[i], sizeof Q.lines[i], "%s", p);
        p = e + 1;
    }
    return 1;
}

/* The interpreter: $EMBED_PYTHON, else the one recorded at build time (build_fmu.py --python),
 * else python3 on PATH (a venv's python follows its pyvenv.cfg by itself). */
static const char *choose_python(void)
{
    const char *e = getenv("EMBED_PYTHON");
    if (e && *e) return e;
    if (*EMBED_BUILD_PYTHON) return EMBED_BUILD_PYTHON;
    return "python3";
}

static void set_env(const char *name, const char *value, char **saved)
{
    const char *old = getenv(name);
    *saved = old ? strdup(old) : NULL;
    if (value) setenv(name, value, 1); else unsetenv(name);
}

static void restore_env(const char *name, char *saved)
{
    if (saved) { setenv(name, saved, 1); free(saved); } else unsetenv(name);
}

/* Make the Python C API available and initialized.  Returns 1, or 0 with err set. */
static int ensure_python(const char *requirements, char *err, size_t n)
{
    int (*is_init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    if (is_init && is_init()) return 1;          /* a Python master, or an earlier FMU */
    if (!Q.done) {
        snprintf(Q.python, sizeof Q.python, "%s", choose_python());
        if (!run_query(Q.python, requirements, err, n)) return 0;
        Q.done = 1;
    }
    if (Q.lines[5][0]) {
        snprintf(err, n, "the Python interpreter '%s' (%s) lacks the package(s) %s; install them "
                 "there (pip install %s) or set EMBED_PYTHON to a python that has them",
                 Q.python, Q.lines[1], Q.lines[5], Q.lines[5]);
        return 0;
    }
    if (!is_init) {
        if (!Q.lines[0][0]) {
            snprintf(err, n, "the Python interpreter '%s' (%s) has no shared libpython (built "
                     "without --enable-shared); set EMBED_PYTHON to one that has", Q.python,
                     Q.lines[1]);
            return 0;
        }
        if (!dlopen(Q.lines[0], RTLD_NOW | RTLD_GLOBAL)) {
            snprintf(err, n, "cannot load %s of the Python interpreter '%s': %s", Q.lines[0],
                     Q.python, dlerror());
            return 0;
        }
        is_init = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    }
    void (*init)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "Py_InitializeEx");
    int (*run)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "PyRun_SimpleString");
    void *(*save)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
    if (!is_init || !init || !run || !save) {
        snprintf(err, n, "%s does not provide the Python C API", Q.lines[0]);
        return 0;
    }
    /* The standard library from the base installation; the rest of sys.path (a venv's
     * site-packages, .pth entries) exactly as the interpreter has it.  Python keeps the
     * master's signal handlers (Py_InitializeEx(0)); the environment is restored after. */
    char *home, *path;
    set_env("PYTHONHOME", Q.lines[3], &home);
    set_env("PYTHONPATH", NULL, &path);
    init(0);
    restore_env("PYTHONHOME", home);
    restore_env("PYTHONPATH", path);
    if (!is_init()) {
        snprintf(err, n, "Python (%s) did not initialize", Q.lines[0]);
        return 0;
    }
    size_t sz = strlen(Q.lines[4]) * 2 + strlen(Q.lines[1]) * 2 + strlen(Q.lines[2]) * 4 + 512;
    char *code = malloc(sz);
    snprintf(code, sz, "import sys\nsys.path[:] = r'''%s'''.split(':')\n"
             "sys.executable = r'''%s'''\nsys.prefix = sys.exec_prefix = r'''%s'''\n",
             Q.lines[4], Q.lines[1], Q.lines[2]);
    int bad = run(code);
    free(code);
    save();                                  /* release the GIL: pythonfmu takes it per call */
    if (bad) {
        snprintf(err, n, "could not set sys.path of the embedded Python (%s)", Q.python);
        return 0;
    }
    return 1;
}

/* ---- instances ------------------------------------------------------------------------------ */

typedef struct {
    fmi2Component inner;
    fmi2CallbackFunctions master;   /* the master's callbacks */
    fmi2CallbackFunctions mine;     /* given to pythonfmu: our filter, with this as environment */
    char *name;
    int logging_on;
    size_t ncat;
    char **cats;
    double last_ok_time;
    int last_ok_set;
} Inst;

static __thread int override_status = -1;
static __thread Inst *current;

EXPORT void embed_fmi2_set_status(int status) { override_status = status; }

/* The GUID this FMU was built with: the Python slave names its FMU states by it. */
EXPORT const char *embed_fmi2_guid(void) { return EMBED_GUID; }

EXPORT void embed_fmi2_set_last_successful_time(double t)
{
    if (current) { current->last_ok_time = t; current->last_ok_set = 1; }
}

static const char *category_of(fmi2Status s)
{
    switch (s) {
    case fmi2Warning: return "logStatusWarning";
    case fmi2Discard: return "logStatusDiscard";
    case fmi2Error: return "logStatusError";
    case fmi2Fatal: return "logStatusFatal";
    default: return "logAll";
    }
}

/* Warnings and worse always reach the master; ok messages when it enabled debug logging (and,
 * if it named categories, only theirs).  The category is never NULL. */
static void filter_logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status s,
                          fmi2String category, fmi2String message, ...)
{
    Inst *I = (Inst *)env;
    if (!I || !I->master.logger) return;
    const char *cat = category && *category ? category : category_of(s);
    if (s < fmi2Warning) {
        if (!I->logging_on) return;
        if (I->ncat) {
            size_t i;
            for (i = 0; i < I->ncat && strcmp(I->cats[i], cat); i++) {}
            if (i == I->ncat) return;
        }
    }
    I->master.logger(I->master.componentEnvironment, name ? name : I->name, s, cat, "%s",
                     message ? message : "");
}

static void say(const fmi2CallbackFunctions *f, const char *name, fmi2Status s,
                const char *fmt, ...)
{
    if (!f || !f->logger) return;
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    f->logger(f->componentEnvironment, name ? name : "", s, category_of(s), "%s", msg);
}

/* file:///a%20b/resources -> /a b/resources */
static void uri_to_path(const char *uri, char *out, size_t n)
{
    const char *p = uri;
    if (!strncmp(p, "file://localhost/", 17)) p += 16;
    else if (!strncmp(p, "file:///", 8)) p += 7;
    else if (!strncmp(p, "file:/", 6)) p += 5;
    size_t j = 0;
    for (; *p && j + 1 < n; p++) {
        if (*p == '%' && p[1] && p[2]) {
            char hex[3] = {p[1], p[2], 0};
            out[j++] = (char)strtol(hex, NULL, 16);
            p += 2;
        } else out[j++] = *p;
    }
    out[j] = 0;
    while (j > 1 && out[j - 1] == '/') out[--j] = 0;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid,
                                     fmi2String resource_uri,
                                     const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                                     fmi2Boolean logging_on)
{
    char err[8192] = "";
    if (!functions || !functions->logger) return NULL;   /* FMI 2.0: both are required */
    if (type != fmi2CoSimulation) {
        say(functions, name, fmi2Error, "this FMU supports co-simulation only");
        return NULL;
    }
    if (!resource_uri || !*resource_uri) {
        say(functions, name, fmi2Error, "fmi2Instantiate: no fmuResourceLocation given");
        return NULL;
    }
    if (!guid || strcmp(guid, EMBED_GUID)) {
        say(functions, name, fmi2Error, "fmi2Instantiate: GUID '%s' does not match this FMU's "
            "modelDescription.xml (guid '%s'): a different FMU or version", guid ? guid : "(null)",
            EMBED_GUID);
        return NULL;
    }
    char resources[PATH_MAX];
    uri_to_path(resource_uri, resources, sizeof resources);
    char requirements[PATH_MAX + 32];
    snprintf(requirements, sizeof requirements, "%s/requirements.txt", resources);
    pthread_mutex_lock(&lock);
    int ok = ensure_python(requirements, err, sizeof err) && load_backend(err, sizeof err);
    pthread_mutex_unlock(&lock);
    if (!ok) {
        say(functions, name, fmi2Error, "fmi2Instantiate failed: %s", err);
        return NULL;
    }
    Inst *I = calloc(1, sizeof *I);
    I->master = *functions;
    I->mine = *functions;
    I->mine.logger = filter_logger;
    I->mine.componentEnvironment = I;
    I->name = strdup(name ? name : "");
    I->logging_on = logging_on;
    current = I;
    I->inner = B.Instantiate(name, type, guid, resource_uri, &I->mine, visible, fmi2True);
    current = NULL;
    if (!I->inner) {
        say(functions, name, fmi2Error, "fmi2Instantiate failed in the Python interpreter %s "
            "(see the message above)", Q.done ? Q.python : "of this process");
        free(I->name);
        free(I);
        return NULL;
    }
    B.SetDebugLogging(I->inner, fmi2True, 0, NULL);
    return I;
}

EXPORT void fmi2FreeInstance(fmi2Component c)
{
    Inst *I = (Inst *)c;
    if (!I) return;
    current = I;
    B.FreeInstance(I->inner);
    current = NULL;
    for (size_t i = 0; i < I->ncat; i++) free(I->cats[i]);
    free(I->cats);
    free(I->name);
    free(I);
}

static fmi2Status finish(fmi2Status r)
{
    int o = override_status;
    override_status = -1;
    current = NULL;
    return (o > (int)r && r != fmi2Fatal) ? (fmi2Status)o : r;
}

#define BEGIN Inst *I = (Inst *)c; if (!I) return fmi2Error; \
    override_status = -1; current = I
#define FORWARD(f, ...) BEGIN; return finish(B.f(I->inner, __VA_ARGS__))
#define FORWARD0(f) BEGIN; return finish(B.f(I->inner))

EXPORT const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
EXPORT const char *fmi2GetVersion(void) { return fmi2Version; }

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n,
                                      const fmi2String cats[])
{
    Inst *I = (Inst *)c;
    if (!I) return fmi2Error;
    for (size_t i = 0; i < I->ncat; i++) free(I->cats[i]);
    free(I->cats);
    I->cats = NULL;
    I->ncat = 0;
    I->logging_on = on;
    if (on && n && cats) {
        I->cats = calloc(n, sizeof *I->cats);
        for (size_t i = 0; i < n; i++) I->cats[I->ncat++] = strdup(cats[i] ? cats[i] : "");
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol,
                                      fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop)
{
    BEGIN;
    I->last_ok_time = start;
    return finish(B.SetupExperiment(I->inner, tol_defined, tol, start, stop_defined, stop));
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{ FORWARD0(EnterInitializationMode); }
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) { FORWARD0(ExitInitializationMode); }
EXPORT fmi2Status fmi2Terminate(fmi2Component c) { FORWARD0(Terminate); }
EXPORT fmi2Status fmi2Reset(fmi2Component c)
{
    BEGIN;
    I->last_ok_time = 0.0;                   /* as after fmi2Instantiate */
    return finish(B.Reset(I->inner));
}

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                              fmi2Real v[]) { FORWARD(GetReal, vr, n, v); }
EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                 fmi2Integer v[]) { FORWARD(GetInteger, vr, n, v); }
EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                 fmi2Boolean v[]) { FORWARD(GetBoolean, vr, n, v); }
EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                fmi2String v[]) { FORWARD(GetString, vr, n, v); }
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                              const fmi2Real v[]) { FORWARD(SetReal, vr, n, v); }
EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                 const fmi2Integer v[]) { FORWARD(SetInteger, vr, n, v); }
EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                 const fmi2Boolean v[]) { FORWARD(SetBoolean, vr, n, v); }
/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs, no surrogates,
 * at most U+10FFFF), or 0. */
static int utf8_char(const unsigned char *p)
{
    if (p[0] < 0x80) return 1;
    int n = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;
    if (!n || p[0] > 0xF4) return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F))) return 0;
    if (n == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] > 0x8F))) return 0;
    return n;
}

/* pythonfmu builds Python str objects from the values before calling the slave; text that is
 * not UTF-8 would fail there, which it reports as fmi2Fatal.  Refused here as fmi2Error. */
EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                const fmi2String v[])
{
    Inst *J = (Inst *)c;
    if (!J) return fmi2Error;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)(v ? v[i] : NULL);
        int k = 1;
        while (p && *p && (k = utf8_char(p)) > 0) p += k;
        if (!p || k == 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "set_string: value reference %u: %s; nothing was set",
                     vr ? vr[i] : 0u, p ? "the text is not valid UTF-8" : "NULL string");
            filter_logger(J, J->name, fmi2Error, "logStatusError", msg);
            return fmi2Error;
        }
    }
    FORWARD(SetString, vr, n, v);
}

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) { FORWARD(GetFMUstate, s); }
EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) { FORWARD(SetFMUstate, s); }
EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s) { FORWARD(FreeFMUstate, s); }
EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *n)
{ FORWARD(SerializedFMUstateSize, s, n); }
EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte b[], size_t n)
{ FORWARD(SerializeFMUstate, s, b, n); }
EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte b[], size_t n,
                                          fmi2FMUstate *s)
{ FORWARD(DeSerializeFMUstate, b, n, s); }

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[],
                                               size_t nu, const fmi2ValueReference z[], size_t nz,
                                               const fmi2Real dv[], fmi2Real df[])
{ FORWARD(GetDirectionalDerivative, u, nu, z, nz, dv, df); }
EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                              size_t n, const fmi2Integer o[], const fmi2Real v[])
{ FORWARD(SetRealInputDerivatives, vr, n, o, v); }
EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                               size_t n, const fmi2Integer o[], fmi2Real v[])
{ FORWARD(GetRealOutputDerivatives, vr, n, o, v); }

EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_prior)
{
    BEGIN;
    I->last_ok_set = 0;
    fmi2Status r = finish(B.DoStep(I->inner, t, h, no_prior));
    if (!I->last_ok_set) I->last_ok_time = r <= fmi2Warning ? t + h : t;
    return r;
}

EXPORT fmi2Status fmi2CancelStep(fmi2Component c)
{
    Inst *I = (Inst *)c;
    if (!I) return fmi2Error;
    say(&I->master, I->name, fmi2Error, "fmi2CancelStep: fmi2DoStep never returns fmi2Pending "
        "here (canRunAsynchronuously is false), there is nothing to cancel");
    return fmi2Error;
}

/* Status inquiries (FMI 2.0 section 4.2.3): what the slave cannot tell gives fmi2Discard. */
EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *v)
{
    (void)s; (void)v;
    return c ? fmi2Discard : fmi2Error;
}

EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *v)
{
    Inst *I = (Inst *)c;
    if (!I || !v) return fmi2Error;
    if (s != fmi2LastSuccessfulTime) return fmi2Discard;
    *v = I->last_ok_time;
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *v)
{
    (void)s; (void)v;
    return c ? fmi2Discard : fmi2Error;
}

EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *v)
{
    if (!c || !v) return fmi2Error;
    if (s != fmi2Terminated) return fmi2Discard;
    *v = fmi2False;
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *v)
{
    (void)s; (void)v;
    return c ? fmi2Discard : fmi2Error;
}
