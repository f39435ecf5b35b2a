/* Shared by the loader's files (compiled together by fmu_src/build.py into the FMU's binary):
 *   fmi2_loader.c   the fmi2 functions: instances, argument checks, steps, get and set;
 *   fmi2_calls.c    the fmi2 functions on FMU states, derivatives, status inquiries;
 *   fmi3_loader.c   the fmi3 co-simulation functions, on top of the fmi2 ones (FMI 3.0 FMUs);
 *   python_env.c    the Python interpreter and pythonfmu's binary, loaded on first use;
 *   python_query.c  the interpreter query's answer kept between processes;
 *   resource_uri.c  fmuResourceLocation (a file: URI) decoded to a folder;
 *   fast_step.c     communication steps with no event run in C (fmu_src/runtime/fast_step.py);
 *   keep_warm.c     a real-time run's pages kept warm between events (no header part);
 *   gil_gate.c      the loader thread gives the GIL way to FMI calls. */
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

/* The interpreter query's answer (python_env.c's QUERY: QUERY_LINES lines) kept between
 * processes (python_query.c): query_cached fills lines and returns 1 where a kept answer is
 * still valid; query_store keeps one. */
#define QUERY_LINES 7
#define QUERY_LINE 8192
int query_cached(const char *python, const char *requirements, char lines[][QUERY_LINE]);
void query_store(const char *python, const char *requirements, char lines[][QUERY_LINE]);

/* ---- instances (fmi2_loader.c) ------------------------------------------------------------ */

typedef struct Saved {              /* an FMU state handed to the master (FMI 2.0 2.1.8) */
    fmi2FMUstate inner;             /* pythonfmu's copy (a Python object) */
    struct Saved *next;
} Saved;

/* The slave's directional derivative (fmu_src/runtime/derivatives.py, registered by the slave
 * while it is constructed): unknowns' and knowns' value references, the seed (nKnown values),
 * the result (nUnknown values); returns the status (the slave may raise it, as in any call). */
typedef int (*DirectionalDerivative)(const fmi2ValueReference *unknown, size_t nunknown,
                                     const fmi2ValueReference *known, size_t nknown,
                                     const fmi2Real *seed, fmi2Real *result);

/* The slave's FMI 3.0-only variables (fmu_src/runtime/arrays.py: the arrays, and scalars FMI 2.0
 * does not show), value references first..first+count-1, given while the slave is constructed:
 * op EXTRA_SIZE answers the number of values of vr; EXTRA_SET and EXTRA_GET take or fill
 * n values and answer the status; EXTRA_WRONG_COUNT logs that n values were given for vr and
 * answers fmi2Error.  Int32 values travel as doubles (exact). */
enum { EXTRA_SIZE, EXTRA_SET, EXTRA_GET, EXTRA_WRONG_COUNT };
typedef int (*ExtraVariables)(int op, unsigned vr, double *values, size_t n);
/* The inputs an unknown depends on (FMI 3.0 2.2.10, the ModelStructure's dependencies): their
 * number, the first n of them in out; -1, logged, if vr is not an unknown. */
typedef long (*VariableDependencies)(unsigned vr, unsigned *out, size_t n);

/* ---- the fast path (fast_step.c; its Python side fmu_src/runtime/fast_step.py) -------------- */

/* The arming record the Python slave owns and hands over (embed_fast_set) after each call that
 * may change its state: what a communication step with no event needs to run here, without
 * Python, to the bit as embed/hybrid/stepping.py's loop runs it.  Field order is mirrored by
 * fast_step.py's ctypes Structure. */
typedef struct {
    void (*f)(double *args, double *out);   /* the mode's compiled RK4 step */
    void (*sync)(void);     /* Python: takes t, x, monitors, armed, t_comm from this record */
    double *args;           /* [t, h, x..., p..., tail...]: f's arguments (p, tail written) */
    double *y;              /* the accepted state's [x..., monitors..., sum |x|] (ny) */
    double *s1, *s2;        /* scratch, ny each */
    int *armed;             /* ng: how each guard is watched (events.py UNARMED/ARMED/HELD) */
    int *enabled;           /* ng */
    unsigned *served_vr;    /* nserved Real value references fmi2GetReal answers here: */
    int *served_at;         /* ... y[served_at[i]], or served_value[i] where served_at < 0 */
    double *served_value;
    int on;                 /* armed by the slave; 0: every call goes to Python */
    int pending;            /* steps taken here that Python has not synced yet */
    int nx, ny, g0, ng;     /* guards: y[nx + g0 .. nx + g0 + ng) */
    int rehearsed;          /* the guard rehearsed in this mode (no approach test), or -1 */
    int nserved;
    double t, t0, h_max, t_next, t_comm;    /* sim time, RK4 grid origin, h_max, RK4's t_next,
                                               the master's communication point */
    double grid_tol, event_tol, probe_g, max_steps;
    unsigned *int_vr;       /* nint Integer and Boolean outputs constant between events */
    int *int_value;         /* (mode, counters, status, discrete flags) answered here: their */
    int *int_boolean;       /* values, and 1 for a Boolean (fmi2GetBoolean), 0 an Integer */
    int nint;
    int armable;            /* the slave may be armed: fast_do_step asks it (arm) first */
    void (*arm)(void);      /* Python: arms the record for the state it holds (or leaves it) */
    /* switching.after_step's thresholds: a step whose y[i_res] > phi_tol (the configuration
     * projected) or y[i_kappa] > kappa_max (the speeds re-selected) goes to Python; -1: none */
    int i_res, i_kappa;
    double phi_tol, kappa_max;
    /* a mode with its monitors apart (CompiledMode._mon): f gives [x', sum |x'|], then
     * fm([t + h, 0, x', p, tail]) the monitors; NULL: f gives them */
    void (*fm)(double *args, double *out);
    /* f keeps a memo (a program mode's: embed/codegen/registers.py Memo), global to its code
     * and so shared by the process's instances: its steps run holding the GIL, as Python's
     * calls of f do (ctypes PYFUNCTYPE), so that no two calls read and write it at once */
    int memo;
    /* a guard falling as it fell over the last step that reaches zero within this many steps
     * is approaching (embed/hybrid/rehearsal.py STEPS: parts of its rehearsal are Python's) */
    double approach_steps;
    /* a mode stepped stage by stage (FastStages), or NULL: f (and fm) give the step */
    struct FastStages *stages;
    /* switching.after_step's projection, Python's (fast_step.py FastStep.project): y = [x...,
     * monitors..., sum] at time t projected in place, the chart kept aside (committed at sync
     * for the projected steps); 0: it failed, the step is Python's */
    int (*project)(double t, double *y);
    int projected;          /* projections in the steps taken here since the last sync */
} FastStep;

/* A mode whose RK4 step runs stage by stage (disk_fence's JetMode: a family's right-hand side
 * f and monitors mon called with a profile's jet at every stage, scenarios/disk_fence/
 * jet_mode.py), the record's own buffers.  buf = [t, x..., p..., jet..., L_f] (n_in): the jet
 * writes buf[j0 ..) from s = buf[i_q] - buf[i_L]; f writes a stage's nx rates, mon the
 * monitors.  The jet is compiled code (jet), or a tape (jet NULL: embed/modes/functions.py's
 * Tape, n_ops instructions (o, i, j, k) run on regs, its n_out outputs the registers outs).
 * Mirrored by fast_step.py's ctypes Structure ``Stages``. */
typedef struct FastStages {
    void (*jet)(double *s, double *out);
    void (*f)(double *buf, double *k);
    void (*mon)(double *buf, double *m);
    double *buf, *k, *s;    /* n_in; 4 nx (the stages' rates); 1 */
    int n_in, j0, i_q, i_L;
    const int *tape, *outs;
    double *regs;
    int n_ops, n_out;
} FastStages;

typedef struct {
    fmi2Component inner;
    fmi2CallbackFunctions master;   /* the master's callbacks */
    fmi2CallbackFunctions mine;     /* given to pythonfmu: our filter, with this as environment */
    char *name;
    int logging_on;
    size_t ncat;
    char **cats;
    double last_ok_time;            /* fmi2LastSuccessfulTime */
    int last_ok_set;                /* the slave set it during this call */
    int override_status;            /* at least this status for the running call, or -1 */
    int dead;                       /* pythonfmu answered fmi2Fatal: it destroyed its instance */
    Saved *states;                  /* the states of this instance not freed yet */
    char *alias;                    /* the resources link's folder (alias_if_needed), or NULL */
    int early_return_allowed;       /* FMI 3.0: the master allows doStep to return at an event */
    int returned_early;             /* the slave stopped the running doStep at an event ... */
    double early_time;              /* ... located at this time */
    DirectionalDerivative dd;       /* the slave's, or NULL (pythonfmu's binary has none) */
    ExtraVariables extra;           /* the slave's FMI 3.0-only variables, or NULL ... */
    unsigned extra_first;           /* ... value references extra_first .. */
    size_t extra_count;             /* ... + extra_count - 1 */
    VariableDependencies deps;      /* the slave's, or NULL */
    FastStep *fast;                 /* the slave's arming record, or NULL */
    long fast_steps;                /* doSteps run by fast_step.c (embed_fast_steps) */
} Inst;

/* fast_step.c: the communication step t .. t + h run here if the record is armed and no event
 * or anything else Python must see happens in it: 1 (state committed to the record), else 0
 * with nothing changed (Python runs the whole step). */
int fast_do_step(Inst *I, double t, double h);
/* fmi2GetReal, fmi2GetInteger (boolean: fmi2GetBoolean) answered from the record: 1, or 0 if a value reference is not
 * served. */
int fast_get_real(Inst *I, const fmi2ValueReference *vr, size_t n, fmi2Real *v);
int fast_get_integer(Inst *I, const fmi2ValueReference *vr, size_t n, int *v, int boolean);
/* Python given the state the fast steps made (before any call that reaches Python). */
void fast_sync(Inst *I);

/* The slave's callbacks above, called as any fmi2 function calls the slave: the instance
 * running (its log), its status override; fmi2Error if it gave none. */
int embed_extra(Inst *I, int op, unsigned vr, double *values, size_t n);
long embed_dependencies(Inst *I, unsigned vr, unsigned *out, size_t n);

/* An instance on the resources folder `resources` (decoded), as fmi2Instantiate makes it;
 * early_return: the slave may stop a step at an event (fmi3InstantiateCoSimulation's
 * earlyReturnAllowed).  NULL, with the reason logged through `functions`. */
Inst *embed_instantiate(fmi2String name, fmi2String guid, const char *resources,
                        const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                        fmi2Boolean logging_on, int early_return);

/* ---- the call frame of the fmi2 functions (fmi2_loader.c) ----------------------------------- */

/* The instance whose call runs on this thread (the slave's callbacks find it here). */
extern __thread Inst *current;
/* The status of a forwarded call: at least what the slave asked for during it. */
fmi2Status status_of(Inst *I, fmi2Status r);
/* A bad call refused by the loader: "fn: why" logged, fmi2Error. */
fmi2Status refuse(Inst *I, const char *fn, const char *fmt, ...);
/* The logger given to pythonfmu: the master's, filtered (env is the instance). */
void filter_logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status s,
                   fmi2String category, fmi2String message, ...);

/* Every call on an instance: NULL is no instance; after pythonfmu's fmi2Fatal its instance is
 * gone (FMI 2.0 2.1.3: no call but fmi2FreeInstance is allowed), so nothing is forwarded. */
#define BEGIN(fn) Inst *I = (Inst *)c; if (!I) return fmi2Error; \
    if (I->dead) { refuse(I, fn, "the instance failed with fmi2Fatal before"); return fmi2Fatal; } \
    gate_enter(); Inst *outer = current; I->override_status = -1; current = I; fast_sync(I)
#define END(r) do { fmi2Status r_ = (r); current = outer; gate_leave(); return r_; } while (0)
#define FORWARD(f, ...) BEGIN("fmi2" #f); END(status_of(I, B.f(I->inner, __VA_ARGS__)))
#define FORWARD0(f) BEGIN("fmi2" #f); END(status_of(I, B.f(I->inner)))
/* FMI 2.0 2.1.7: vr[] and value[] have nvr elements; NULL with nvr > 0 is an error */
#define CHECK_ARRAYS(fn, vr, n, v) if ((n) && (!(vr) || !(v))) \
    END(refuse(I, fn, "%s is NULL with nvr = %zu", !(vr) ? "vr[]" : "value[]", (size_t)(n)))

/* ---- FMI calls under way (gil_gate.c) ----------------------------------------------------- */

/* An FMI call that may enter Python counts itself in before (BEGIN) and out after (END): the
 * loader thread, gated, gives it the GIL. */
void gate_enter(void);
void gate_leave(void);
/* Whether the gated loader thread runs a job now (keep_warm.c pauses then): 1 or 0. */
int gate_loader_working(void);

/* This binary kept loaded for the process's life (keep_warm.c): 1, or 0. */
int pin_binary(void);

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
