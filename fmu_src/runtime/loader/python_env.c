/* The Python interpreter and pythonfmu's binary, loaded on the first fmi2Instantiate.
 *
 * Why (README "Which Python", DESIGN.md): pythonfmu's binary leaves the Python C API unresolved,
 * so a C or C++ master cannot load it; its unload destructor releases a static shared_ptr that
 * the C++ runtime already destroyed at exit.  Here libpython is loaded globally when the
 * process has none, and the shared_ptr released first at exit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader.h"

#ifndef EMBED_BUILD_PYTHON
#define EMBED_BUILD_PYTHON ""
#endif

extern char **environ;

Backend B;

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

/* Run `python -c QUERY`: libpython, executable, prefix, base prefix, sys.path, missing packages,
 * and the folders and files besides sys.path's that the answer depends on (python_query.c). */
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
    "print(os.pathsep.join(p for p in sys.path if p)); print(' '.join(miss))\n"
    "import site\n"
    "more = [os.path.join(sys.prefix, 'pyvenv.cfg')] + site.getsitepackages()\n"
    "more += [site.getusersitepackages()] if site.ENABLE_USER_SITE else []\n"
    "print(os.pathsep.join(more))\n";

static struct {
    int done;
    char python[PATH_MAX];          /* what was run */
    char lines[QUERY_LINES][QUERY_LINE];   /* the answers, in QUERY's order */
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
    static char buf[QUERY_LINES * QUERY_LINE];
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
    for (int i = 0; i < QUERY_LINES; i++) {
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
        if (!query_cached(Q.python, requirements, Q.lines)) {   /* else ran before (kept) */
            if (!run_query(Q.python, requirements, err, n)) return 0;
            query_store(Q.python, requirements, Q.lines);
        }
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

int python_and_backend(const char *requirements, char *err, size_t n)
{
    pthread_mutex_lock(&lock);
    int ok = ensure_python(requirements, err, n) && load_backend(err, n);
    pthread_mutex_unlock(&lock);
    return ok;
}

const char *started_python(void)
{
    return Q.done ? Q.python : "of this process";
}
