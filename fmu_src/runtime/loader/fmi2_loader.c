/* The FMU's binary: every fmi2 function, forwarded to pythonfmu's binary (shipped beside this
 * file as <modelIdentifier>_pythonfmu.so, loaded by python_env.c) after the checks FMI 2.0
 * asks for and pythonfmu 0.7.0 lacks (measured 2026-11-27, issue 33):
 *  - fmuResourceLocation percent-decoded (resource_uri.c); pythonfmu decodes only "%20" and
 *    crashed on any other encoded byte, on an http: URI and on a NULL instanceName;
 *  - NULL arguments answered with fmi2Error (pythonfmu dereferences them);
 *  - FMU states owned by their instance: fmi2FreeFMUstate sets the handle to NULL, a freed or
 *    foreign handle is refused, never dereferenced, a reused handle frees its old copy, and
 *    fmi2FreeInstance frees what the master left;
 *  - serialization buffers checked (pythonfmu copied `size` bytes whatever the state's length);
 *  - messages of warnings and worse always delivered with a category, ok messages only when
 *    the master enabled debug logging (pythonfmu drops errors when logging is off);
 *  - a status override and fmi2LastSuccessfulTime kept per instance, set by the slave's Python
 *    code during a call (embed_fmi2_set_status, ...).
 * Built by build_fmu.py with the machine's C compiler, together with the other .c files here. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

#ifndef EMBED_GUID                 /* the modelDescription's guid, given by build_fmu.py */
#error "compile with -DEMBED_GUID=\"<guid of modelDescription.xml>\""
#endif

/* ---- instances ------------------------------------------------------------------------------ */

/* The instance whose call runs on this thread.  The slave's Python code runs on the thread of
 * the master's call and tells its status through the functions below, which find the instance
 * here: calls of different instances on different threads never see each other's. */
__thread Inst *current;

EXPORT void embed_fmi2_set_status(int status)
{
    if (current && status > current->override_status) current->override_status = status;
}

EXPORT void embed_fmi2_set_last_successful_time(double t)
{
    if (current) { current->last_ok_time = t; current->last_ok_set = 1; }
}

/* FMI 3.0 early return (fmi3_loader.c): whether the master allows the running instance's doStep
 * to return at an event, and the slave's word that it did, at the event's located time t. */
EXPORT int embed_fmi3_early_return_allowed(void)
{
    return current ? current->early_return_allowed : 0;
}

EXPORT void embed_fmi3_returned_early(double t)
{
    if (current) { current->returned_early = 1; current->early_time = t; }
}

/* The Python slave's route for fmi2GetDirectionalDerivative, which pythonfmu's binary refuses:
 * given while the running instance's slave is constructed (fmi2Instantiate, fmi2Reset). */
EXPORT void embed_fmi2_set_directional_derivative(DirectionalDerivative f)
{
    if (current) current->dd = f;
}

/* The Python slave's FMI 3.0-only variables and dependencies (loader.h), given while the running
 * instance's slave is constructed. */
EXPORT void embed_fmi3_set_extra(ExtraVariables f, unsigned first, size_t count,
                                 VariableDependencies d)
{
    if (current) {
        current->extra = f;
        current->extra_first = first;
        current->extra_count = count;
        current->deps = d;
    }
}

/* The slave's arming record for the fast path (fast_step.c), or NULL: given by the running
 * instance's slave (fmu_src/runtime/fast_step.py) while it is constructed. */
EXPORT void embed_fast_set(FastStep *F)
{
    if (current) current->fast = F;
}

/* The doSteps of instance c that fast_step.c ran without Python (tests, benchmarks). */
EXPORT long embed_fast_steps(fmi2Component c)
{
    return c ? ((Inst *)c)->fast_steps : -1;
}

/* The GUID this FMU was built with: the Python slave names its FMU states by it. */
EXPORT const char *embed_fmi2_guid(void) { return EMBED_GUID; }

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
 * if it named categories, only theirs).  The category is never NULL (FMI 2.0 2.1.5). */
void filter_logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status s,
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

/* A message of the running call's slave that has no instance to log with (the class-level
 * state calls of pythonfmu): logged for the instance whose call runs on this thread. */
EXPORT void embed_fmi2_log(int status, const char *message)
{
    if (current) filter_logger(current, NULL, (fmi2Status)status, NULL, message);
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

/* A bad call refused by the loader: "fn: why" logged, fmi2Error (FMI 2.0 2.1.3: "the FMU
 * encountered an error"; the instance is unchanged). */
fmi2Status refuse(Inst *I, const char *fn, const char *fmt, ...)
{
    char msg[4096];
    int k = snprintf(msg, sizeof msg, "%s: ", fn);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    filter_logger(I, NULL, fmi2Error, NULL, msg);
    return fmi2Error;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid,
                                     fmi2String resource_uri,
                                     const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                                     fmi2Boolean logging_on)
{
    char err[8192] = "";
    /* FMI 2.0 2.1.5: callbacks and their logger are required; without a logger nothing can
     * be said, so NULL is all the answer */
    if (!functions || !functions->logger) return NULL;
    if (!name) {
        say(functions, "", fmi2Error, "fmi2Instantiate: instanceName is NULL (FMI 2.0 section "
            "2.1.5 requires the name of the instance)");
        return NULL;
    }
    if (type != fmi2CoSimulation) {
        say(functions, name, fmi2Error, "this FMU supports co-simulation only");
        return NULL;
    }
    char resources[PATH_MAX];
    if (!resource_folder(resource_uri, resources, sizeof resources, err, sizeof err)) {
        say(functions, name, fmi2Error, "fmi2Instantiate: %s", err);
        return NULL;
    }
    return embed_instantiate(name, guid, resources, functions, visible, logging_on, 0);
}

Inst *embed_instantiate(fmi2String name, fmi2String guid, const char *folder,
                        const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                        fmi2Boolean logging_on, int early_return)
{
    char err[8192] = "";
    if (!guid || strcmp(guid, EMBED_GUID)) {
        say(functions, name, fmi2Error, "instantiate: GUID '%s' does not match this FMU's "
            "modelDescription.xml (guid or instantiationToken '%s'): a different FMU or version",
            guid ? guid : "(null)", EMBED_GUID);
        return NULL;
    }
    char resources[PATH_MAX];
    snprintf(resources, sizeof resources, "%s", folder);
    char requirements[PATH_MAX + 32];
    snprintf(requirements, sizeof requirements, "%s/requirements.txt", resources);
    char *alias = NULL;
    if (!python_and_backend(requirements, err, sizeof err)
        || !alias_if_needed(resources, sizeof resources, &alias, err, sizeof err)) {
        say(functions, name, fmi2Error, "instantiate failed: %s", err);
        return NULL;
    }
    Inst *I = calloc(1, sizeof *I);
    if (!I || !(I->name = strdup(name))) {
        say(functions, name, fmi2Error, "instantiate: out of memory");
        free(I);
        remove_alias(alias);
        return NULL;
    }
    I->master = *functions;
    I->mine = *functions;
    I->mine.logger = filter_logger;
    I->mine.componentEnvironment = I;
    I->logging_on = logging_on;
    I->override_status = -1;
    I->alias = alias;
    I->early_return_allowed = early_return;
    Inst *outer = current;
    current = I;
    /* pythonfmu is given the decoded folder, not the URI */
    I->inner = B.Instantiate(name, fmi2CoSimulation, guid, resources, &I->mine, visible,
                             fmi2True);
    current = outer;
    if (!I->inner) {
        say(functions, name, fmi2Error, "instantiate failed in the Python interpreter %s "
            "(see the message above)", started_python());
        remove_alias(I->alias);
        free(I->name);
        free(I);
        return NULL;
    }
    B.SetDebugLogging(I->inner, fmi2True, 0, NULL);
    return I;
}

/* FMI 2.0 2.1.5: everything the instance allocated is freed, its remaining states too. */
EXPORT void fmi2FreeInstance(fmi2Component c)
{
    Inst *I = (Inst *)c;
    if (!I) return;
    Inst *outer = current;
    current = I;
    while (I->states) {
        Saved *w = I->states;
        I->states = w->next;
        B.FreeFMUstate(I->inner, &w->inner);
        free(w);
    }
    I->fast = NULL;                             /* the slave's record goes with it */
    if (!I->dead) B.FreeInstance(I->inner);    /* after fmi2Fatal pythonfmu freed its objects */
    current = outer;
    for (size_t i = 0; i < I->ncat; i++) free(I->cats[i]);
    free(I->cats);
    free(I->name);
    remove_alias(I->alias);
    free(I);
}

/* The status of a forwarded call: at least what the slave asked for during it. */
fmi2Status status_of(Inst *I, fmi2Status r)
{
    int o = I->override_status;
    I->override_status = -1;
    if (r == fmi2Fatal) I->dead = 1;
    return (o > (int)r && r != fmi2Fatal) ? (fmi2Status)o : r;
}

EXPORT const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
EXPORT const char *fmi2GetVersion(void) { return fmi2Version; }

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n,
                                      const fmi2String cats[])
{
    BEGIN("fmi2SetDebugLogging");
    if (on && n && !cats) END(refuse(I, "fmi2SetDebugLogging", "categories[] is NULL with "
                                     "nCategories = %zu", n));
    for (size_t i = 0; i < I->ncat; i++) free(I->cats[i]);
    free(I->cats);
    I->cats = NULL;
    I->ncat = 0;
    I->logging_on = on;
    if (on && n) {
        if (!(I->cats = calloc(n, sizeof *I->cats)))
            END(refuse(I, "fmi2SetDebugLogging", "out of memory"));
        for (size_t i = 0; i < n; i++)
            if ((I->cats[I->ncat] = strdup(cats[i] ? cats[i] : ""))) I->ncat++;
    }
    END(fmi2OK);
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol,
                                      fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop)
{
    BEGIN("fmi2SetupExperiment");
    fmi2Status r = status_of(I, B.SetupExperiment(I->inner, tol_defined, tol, start,
                                                  stop_defined, stop));
    if (r <= fmi2Warning) I->last_ok_time = start;     /* a refused call changes nothing */
    END(r);
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{ FORWARD0(EnterInitializationMode); }
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) { FORWARD0(ExitInitializationMode); }
EXPORT fmi2Status fmi2Terminate(fmi2Component c) { FORWARD0(Terminate); }
EXPORT fmi2Status fmi2Reset(fmi2Component c)
{
    BEGIN("fmi2Reset");
    I->fast = NULL;                 /* pythonfmu makes a new slave, which gives its own */
    fmi2Status r = status_of(I, B.Reset(I->inner));
    if (r <= fmi2Warning) I->last_ok_time = 0.0;       /* as after fmi2Instantiate */
    END(r);
}

#define GET_SET(F, T) \
    EXPORT fmi2Status fmi2##F(fmi2Component c, const fmi2ValueReference vr[], size_t n, T v[]) \
    { BEGIN("fmi2" #F); CHECK_ARRAYS("fmi2" #F, vr, n, v); \
      END(status_of(I, B.F(I->inner, vr, n, v))); }
/* The outputs the fast path serves (fast_step.c) without Python, else as the others. */
#define FAST_GET(F, T, FAST) \
    EXPORT fmi2Status fmi2##F(fmi2Component c, const fmi2ValueReference vr[], size_t n, T v[]) \
    { if (c && !((Inst *)c)->dead && (FAST)) return fmi2OK; \
      BEGIN("fmi2" #F); CHECK_ARRAYS("fmi2" #F, vr, n, v); \
      END(status_of(I, B.F(I->inner, vr, n, v))); }
FAST_GET(GetReal, fmi2Real, fast_get_real((Inst *)c, vr, n, v))
FAST_GET(GetInteger, fmi2Integer, fast_get_integer((Inst *)c, vr, n, v, 0))
FAST_GET(GetBoolean, fmi2Boolean, fast_get_integer((Inst *)c, vr, n, v, 1))
GET_SET(GetString, fmi2String)
GET_SET(SetReal, const fmi2Real)
GET_SET(SetInteger, const fmi2Integer)
GET_SET(SetBoolean, const fmi2Boolean)

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
    BEGIN("fmi2SetString");
    CHECK_ARRAYS("fmi2SetString", vr, n, v);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)v[i];
        int k = 1;
        while (p && *p && (k = utf8_char(p)) > 0) p += k;
        if (!p || k == 0)
            END(refuse(I, "set_string", "value reference %u: %s; nothing was set", vr[i],
                       p ? "the text is not valid UTF-8" : "NULL string"));
    }
    END(status_of(I, B.SetString(I->inner, vr, n, v)));
}

/* FMI 2.0 4.2.2; fmi2LastSuccessfulTime (4.2.3): the step's end after success, its start (or
 * what the slave said) after fmi2Discard, unchanged after a refused call. */
EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_prior)
{
    Inst *F = (Inst *)c;         /* a step with no event runs in C (fast_step.c) */
    if (F && !F->dead) {
        gate_enter();            /* (its memo's steps take the GIL) */
        int fast = fast_do_step(F, t, h);
        gate_leave();
        if (fast) {
            F->last_ok_time = t + h;
            return fmi2OK;
        }
    }
    BEGIN("fmi2DoStep");
    I->last_ok_set = 0;
    fmi2Status r = status_of(I, B.DoStep(I->inner, t, h, no_prior));
    if (r <= fmi2Warning) I->last_ok_time = t + h;
    else if (r == fmi2Discard && !I->last_ok_set) I->last_ok_time = t;
    END(r);
}
