/* The FMI 3.0 co-simulation functions of the FMU's binary, on top of its fmi2 functions
 * (fmi2_loader.c) and so on the same Python slave, with every check those make.
 *
 * Why here and not pythonfmu3 (DESIGN.md, 2026-11-27): pythonfmu3 0.3.4's binary drops the event
 * flags its do_step returns, ignores the master's eventModeUsed and earlyReturnAllowed, fails
 * in event mode and crashes fmusim when saving a state.  What FMI 3.0 adds for this FMU:
 *  - early return (FMI 3.0 4.2.1, fmi3DoStep): with earlyReturnAllowed the slave stops a step
 *    at the first event it locates (Simulator.advance(stop_at_event=True)), after handling it;
 *    doStep answers earlyReturn = true and lastSuccessfulTime = the located time;
 *  - event mode (4.2.3, hasEventMode): with eventModeUsed such a return also sets
 *    eventHandlingNeeded; the event is handled already, so fmi3UpdateDiscreteStates reports
 *    nothing pending.  Without early return every event stays inside its step, as in FMI 2.0;
 *  - the call sequence of 4.2.5 (Fig. 12) for the modes FMI 2.0 lacks: event mode and step
 *    mode are checked here, the rest by the slave (fmu_src/runtime/fmi2.py);
 *  - the variables' values, of the types and arrays FMI 3.0 adds: fmi3_values.c;
 *  - fmi3GetVariableDependencies (2.2.10): the slave's answer, the ModelStructure's. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi3_inst.h"

const char *const MODE_NAMES[] = {"Instantiated", "Initialization Mode", "Event Mode",
                                  "Step Mode", "Terminated"};

static void say3(fmi3LogMessageCallback log, fmi3InstanceEnvironment env, fmi3Status s,
                 const char *fmt, ...)
{
    if (!log) return;
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log(env, s, s == fmi3OK ? "logAll" : s == fmi3Warning ? "logStatusWarning" :
        s == fmi3Discard ? "logStatusDiscard" : s == fmi3Error ? "logStatusError" :
        "logStatusFatal", msg);
}

/* The fmi2 layer's logger, speaking to the master's fmi3 one (the statuses are numbered alike). */
static void to_fmi3_logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status s,
                           fmi2String category, fmi2String fmt, ...)
{
    (void)name;
    Inst3 *J = (Inst3 *)env;
    if (!J || !J->log) return;
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt ? fmt : "", ap);
    va_end(ap);
    J->log(J->env, (fmi3Status)s, category, msg);
}

static void *alloc_mem(size_t n, size_t size) { return calloc(n, size); }

fmi3Status refuse3(Inst3 *J, const char *fn, const char *fmt, ...)
{
    char msg[4096];
    int k = snprintf(msg, sizeof msg, "%s: ", fn);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    if (J->log) J->log(J->env, fmi3Error, "logStatusError", msg);
    return fmi3Error;
}

EXPORT const char *fmi3GetVersion(void) { return fmi3Version; }

EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance inst, fmi3Boolean on, size_t n,
                                      const fmi3String cats[])
{
    J_OF(inst);
    return (fmi3Status)fmi2SetDebugLogging(J->c2, on, n, cats);
}

EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token,
                                                 fmi3String resources, fmi3Boolean visible,
                                                 fmi3Boolean logging_on,
                                                 fmi3InstanceEnvironment env,
                                                 fmi3LogMessageCallback log)
{
    (void)token; (void)resources; (void)visible; (void)logging_on;
    say3(log, env, fmi3Error, "fmi3InstantiateModelExchange: %s supports co-simulation only",
         name ? name : "this FMU");
    return NULL;
}

EXPORT fmi3Instance fmi3InstantiateScheduledExecution(
    fmi3String name, fmi3String token, fmi3String resources, fmi3Boolean visible,
    fmi3Boolean logging_on, fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
    fmi3ClockUpdateCallback clock, fmi3LockPreemptionCallback lock,
    fmi3UnlockPreemptionCallback unlock)
{
    (void)token; (void)resources; (void)visible; (void)logging_on; (void)clock; (void)lock;
    (void)unlock;
    say3(log, env, fmi3Error, "fmi3InstantiateScheduledExecution: %s supports co-simulation "
         "only", name ? name : "this FMU");
    return NULL;
}

EXPORT fmi3Instance fmi3InstantiateCoSimulation(
    fmi3String name, fmi3String token, fmi3String resource_path, fmi3Boolean visible,
    fmi3Boolean logging_on, fmi3Boolean event_mode_used, fmi3Boolean early_return_allowed,
    const fmi3ValueReference required[], size_t nrequired, fmi3InstanceEnvironment env,
    fmi3LogMessageCallback log, fmi3IntermediateUpdateCallback intermediate)
{
    (void)required; (void)nrequired; (void)intermediate;  /* providesIntermediateUpdate="false" */
    if (!name) {
        say3(log, env, fmi3Error, "fmi3InstantiateCoSimulation: instanceName is NULL");
        return NULL;
    }
    /* FMI 3.0 2.3.1: resourcePath is an absolute folder path ending in '/', or NULL */
    if (!resource_path || !*resource_path) {
        say3(log, env, fmi3Error, "fmi3InstantiateCoSimulation: resourcePath is %s; this FMU "
             "runs from its resources folder", resource_path ? "empty" : "NULL");
        return NULL;
    }
    char folder[PATH_MAX];
    size_t n = strlen(resource_path);
    if (n >= sizeof folder) {
        say3(log, env, fmi3Error, "fmi3InstantiateCoSimulation: resourcePath is too long");
        return NULL;
    }
    memcpy(folder, resource_path, n + 1);
    while (n > 1 && folder[n - 1] == '/') folder[--n] = 0;
    Inst3 *J = calloc(1, sizeof *J);
    if (!J) {
        say3(log, env, fmi3Error, "fmi3InstantiateCoSimulation: out of memory");
        return NULL;
    }
    J->env = env;
    J->log = log;
    J->event_mode_used = event_mode_used;
    J->mode = M_INSTANTIATED;
    fmi2CallbackFunctions cb = {to_fmi3_logger, alloc_mem, free, NULL, J};
    if (!(J->c2 = embed_instantiate(name, token, folder, &cb, visible, logging_on,
                                    early_return_allowed))) {
        free(J);
        return NULL;
    }
    return J;
}

EXPORT void fmi3FreeInstance(fmi3Instance inst)
{
    Inst3 *J = (Inst3 *)inst;
    if (!J) return;
    fmi2FreeInstance(J->c2);
    free(J);
}

EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance inst, fmi3Boolean tol_defined,
                                              fmi3Float64 tol, fmi3Float64 start,
                                              fmi3Boolean stop_defined, fmi3Float64 stop)
{
    J_OF(inst);
    ONLY_IN("fmi3EnterInitializationMode", J->mode == M_INSTANTIATED);
    fmi3Status r = (fmi3Status)fmi2SetupExperiment(J->c2, tol_defined, tol, start, stop_defined,
                                                   stop);
    if (r > fmi3Warning) return r;
    fmi3Status r2 = (fmi3Status)fmi2EnterInitializationMode(J->c2);
    if (r2 <= fmi3Warning) J->mode = M_INIT;
    return r2 > r ? r2 : r;
}

/* FMI 3.0 4.2.1: after initialization the FMU is in event mode if the master uses it */
EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance inst)
{
    J_OF(inst);
    ONLY_IN("fmi3ExitInitializationMode", J->mode == M_INIT);
    fmi3Status r = (fmi3Status)fmi2ExitInitializationMode(J->c2);
    if (r <= fmi3Warning) J->mode = J->event_mode_used ? M_EVENT : M_STEP;
    return r;
}

EXPORT fmi3Status fmi3EnterEventMode(fmi3Instance inst)
{
    J_OF(inst);
    if (!J->event_mode_used)
        return refuse3(J, "fmi3EnterEventMode", "the instance was created with eventModeUsed = "
                       "false (FMI 3.0, section 4.2.3)");
    ONLY_IN("fmi3EnterEventMode", J->mode == M_STEP);
    J->mode = M_EVENT;
    return fmi3OK;
}

/* The event that made doStep return is handled before the return (its reset map applied and
 * any condition it leaves due): nothing is left for event mode to update. */
EXPORT fmi3Status fmi3UpdateDiscreteStates(fmi3Instance inst, fmi3Boolean *need_update,
                                           fmi3Boolean *terminate, fmi3Boolean *nominals,
                                           fmi3Boolean *values, fmi3Boolean *next_defined,
                                           fmi3Float64 *next_time)
{
    J_OF(inst);
    ONLY_IN("fmi3UpdateDiscreteStates", J->mode == M_EVENT);
    if (!need_update || !terminate || !nominals || !values || !next_defined || !next_time)
        return refuse3(J, "fmi3UpdateDiscreteStates", "an output argument is NULL");
    *need_update = *terminate = *nominals = *values = *next_defined = fmi3False;
    *next_time = 0.0;
    return fmi3OK;
}

EXPORT fmi3Status fmi3EnterStepMode(fmi3Instance inst)
{
    J_OF(inst);
    ONLY_IN("fmi3EnterStepMode", J->mode == M_EVENT);
    J->mode = M_STEP;
    return fmi3OK;
}

EXPORT fmi3Status fmi3DoStep(fmi3Instance inst, fmi3Float64 t, fmi3Float64 h,
                             fmi3Boolean no_prior, fmi3Boolean *event_needed,
                             fmi3Boolean *terminate, fmi3Boolean *early,
                             fmi3Float64 *last_time)
{
    J_OF(inst);
    ONLY_IN("fmi3DoStep", J->mode == M_STEP);
    if (!event_needed || !terminate || !early || !last_time)
        return refuse3(J, "fmi3DoStep", "an output argument is NULL");
    Inst *I = J->c2;
    I->returned_early = 0;
    fmi3Status r = (fmi3Status)fmi2DoStep(I, t, h, no_prior);
    int stopped = I->returned_early && r <= fmi3Warning;
    *early = stopped ? fmi3True : fmi3False;
    *event_needed = stopped && J->event_mode_used ? fmi3True : fmi3False;
    *terminate = fmi3False;
    *last_time = stopped ? I->early_time : I->last_ok_time;
    if (stopped) I->last_ok_time = I->early_time;
    return r;
}

EXPORT fmi3Status fmi3Terminate(fmi3Instance inst)
{
    J_OF(inst);
    ONLY_IN("fmi3Terminate", J->mode == M_STEP || J->mode == M_EVENT);
    fmi3Status r = (fmi3Status)fmi2Terminate(J->c2);
    if (r <= fmi3Warning) J->mode = M_TERMINATED;
    return r;
}

EXPORT fmi3Status fmi3Reset(fmi3Instance inst)
{
    J_OF(inst);
    fmi3Status r = (fmi3Status)fmi2Reset(J->c2);
    if (r <= fmi3Warning) J->mode = M_INSTANTIATED;
    return r;
}

/* ---- FMU states: the fmi2 layer's, with its ownership checks (fmi2_loader.c) ---------------- */

EXPORT fmi3Status fmi3GetFMUState(fmi3Instance inst, fmi3FMUState *s)
{ J_OF(inst); return (fmi3Status)fmi2GetFMUstate(J->c2, s); }
EXPORT fmi3Status fmi3SetFMUState(fmi3Instance inst, fmi3FMUState s)
{ J_OF(inst); return (fmi3Status)fmi2SetFMUstate(J->c2, s); }
EXPORT fmi3Status fmi3FreeFMUState(fmi3Instance inst, fmi3FMUState *s)
{ J_OF(inst); return (fmi3Status)fmi2FreeFMUstate(J->c2, s); }
EXPORT fmi3Status fmi3SerializedFMUStateSize(fmi3Instance inst, fmi3FMUState s, size_t *n)
{ J_OF(inst); return (fmi3Status)fmi2SerializedFMUstateSize(J->c2, s, n); }
EXPORT fmi3Status fmi3SerializeFMUState(fmi3Instance inst, fmi3FMUState s, fmi3Byte b[],
                                        size_t n)
{ J_OF(inst); return (fmi3Status)fmi2SerializeFMUstate(J->c2, s, (fmi2Byte *)b, n); }
EXPORT fmi3Status fmi3DeserializeFMUState(fmi3Instance inst, const fmi3Byte b[], size_t n,
                                          fmi3FMUState *s)
{ J_OF(inst); return (fmi3Status)fmi2DeSerializeFMUstate(J->c2, (const fmi2Byte *)b, n, s); }

/* ---- what this FMU does not provide (its modelDescription.xml says so) ----------------------- */

#define NOT_PROVIDED(call, why) { J_OF(inst); return refuse3(J, call, why); }

/* FMI 3.0 2.2.10 (providesPerElementDependencies): the inputs an unknown depends on, as the
 * ModelStructure lists them; every variable concerned is a scalar, so each element index is 0
 * ("the whole variable"), and each kind fmi3Dependent (no particular structure), as declared. */
EXPORT fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance inst, fmi3ValueReference vr,
                                                      size_t *n)
{
    J_OF(inst);
    if (!n) return refuse3(J, "fmi3GetNumberOfVariableDependencies", "nDependencies is NULL");
    long k = embed_dependencies(J->c2, vr, NULL, 0);
    if (k < 0) return refuse3(J, "fmi3GetNumberOfVariableDependencies", "value reference %u "
                              "is not an unknown of ModelStructure (an output or initial "
                              "unknown)", vr);
    *n = (size_t)k;
    return fmi3OK;
}

EXPORT fmi3Status fmi3GetVariableDependencies(fmi3Instance inst, fmi3ValueReference d,
                                              size_t ed[], fmi3ValueReference ind[], size_t ei[],
                                              fmi3DependencyKind k[], size_t n)
{
    J_OF(inst);
    const char *fn = "fmi3GetVariableDependencies";
    if (n && (!ed || !ind || !ei || !k)) return refuse3(J, fn, "an output array is NULL with "
                                                        "nDependencies = %zu", n);
    long m = embed_dependencies(J->c2, d, NULL, 0);
    if (m < 0) return refuse3(J, fn, "value reference %u is not an unknown of ModelStructure "
                              "(an output or initial unknown)", d);
    if ((size_t)m != n) return refuse3(J, fn, "nDependencies = %zu but value reference %u has "
                                       "%ld (fmi3GetNumberOfVariableDependencies)", n, d, m);
    if (n && embed_dependencies(J->c2, d, ind, n) != m)
        return refuse3(J, fn, "the dependencies of value reference %u changed", d);
    for (size_t i = 0; i < n; i++) {
        ed[i] = 0;
        ei[i] = 0;
        k[i] = fmi3Dependent;
    }
    return fmi3OK;
}
/* FMI 3.0 2.2.11: the fmi2 layer's (fmi2_loader.c); every variable is a scalar, so nSeed is
 * nKnowns and nSensitivity nUnknowns.  Allowed where outputs may be read (4.2.5). */
EXPORT fmi3Status fmi3GetDirectionalDerivative(fmi3Instance inst, const fmi3ValueReference u[],
                                               size_t nu, const fmi3ValueReference k[], size_t nk,
                                               const fmi3Float64 s[], size_t ns,
                                               fmi3Float64 out[], size_t no)
{
    J_OF(inst);
    ONLY_IN("fmi3GetDirectionalDerivative", J->mode == M_INIT || J->mode == M_EVENT
            || J->mode == M_STEP || J->mode == M_TERMINATED);
    if (ns != nk)
        return refuse3(J, "fmi3GetDirectionalDerivative", "nSeed = %zu but nKnowns = %zu (every "
                       "variable of this FMU is a scalar)", ns, nk);
    if (no != nu)
        return refuse3(J, "fmi3GetDirectionalDerivative", "nSensitivity = %zu but nUnknowns = "
                       "%zu (every variable of this FMU is a scalar)", no, nu);
    return (fmi3Status)fmi2GetDirectionalDerivative(J->c2, u, nu, k, nk, s, out);
}
EXPORT fmi3Status fmi3GetAdjointDerivative(fmi3Instance inst, const fmi3ValueReference u[],
                                           size_t nu, const fmi3ValueReference k[], size_t nk,
                                           const fmi3Float64 s[], size_t ns, fmi3Float64 out[],
                                           size_t no)
{ (void)u; (void)nu; (void)k; (void)nk; (void)s; (void)ns; (void)out; (void)no;
  NOT_PROVIDED("fmi3GetAdjointDerivative", "providesAdjointDerivatives is false") }
EXPORT fmi3Status fmi3EnterConfigurationMode(fmi3Instance inst)
NOT_PROVIDED("fmi3EnterConfigurationMode", "this FMU has no structural parameters")
EXPORT fmi3Status fmi3ExitConfigurationMode(fmi3Instance inst)
NOT_PROVIDED("fmi3ExitConfigurationMode", "this FMU has no structural parameters")
EXPORT fmi3Status fmi3GetIntervalDecimal(fmi3Instance inst, const fmi3ValueReference vr[],
                                         size_t n, fmi3Float64 iv[], fmi3IntervalQualifier q[])
{ (void)iv; (void)q; return no_such_type(inst, "fmi3GetIntervalDecimal", "Clock", vr, n); }
EXPORT fmi3Status fmi3GetIntervalFraction(fmi3Instance inst, const fmi3ValueReference vr[],
                                          size_t n, fmi3UInt64 c[], fmi3UInt64 r[],
                                          fmi3IntervalQualifier q[])
{ (void)c; (void)r; (void)q; return no_such_type(inst, "fmi3GetIntervalFraction", "Clock", vr, n); }
EXPORT fmi3Status fmi3GetShiftDecimal(fmi3Instance inst, const fmi3ValueReference vr[], size_t n,
                                      fmi3Float64 s[])
{ (void)s; return no_such_type(inst, "fmi3GetShiftDecimal", "Clock", vr, n); }
EXPORT fmi3Status fmi3GetShiftFraction(fmi3Instance inst, const fmi3ValueReference vr[], size_t n,
                                       fmi3UInt64 c[], fmi3UInt64 r[])
{ (void)c; (void)r; return no_such_type(inst, "fmi3GetShiftFraction", "Clock", vr, n); }
EXPORT fmi3Status fmi3SetIntervalDecimal(fmi3Instance inst, const fmi3ValueReference vr[],
                                         size_t n, const fmi3Float64 iv[])
{ (void)iv; return no_such_type(inst, "fmi3SetIntervalDecimal", "Clock", vr, n); }
EXPORT fmi3Status fmi3SetIntervalFraction(fmi3Instance inst, const fmi3ValueReference vr[],
                                          size_t n, const fmi3UInt64 c[], const fmi3UInt64 r[])
{ (void)c; (void)r; return no_such_type(inst, "fmi3SetIntervalFraction", "Clock", vr, n); }
EXPORT fmi3Status fmi3SetShiftDecimal(fmi3Instance inst, const fmi3ValueReference vr[], size_t n,
                                      const fmi3Float64 s[])
{ (void)s; return no_such_type(inst, "fmi3SetShiftDecimal", "Clock", vr, n); }
EXPORT fmi3Status fmi3SetShiftFraction(fmi3Instance inst, const fmi3ValueReference vr[], size_t n,
                                       const fmi3UInt64 c[], const fmi3UInt64 r[])
{ (void)c; (void)r; return no_such_type(inst, "fmi3SetShiftFraction", "Clock", vr, n); }
EXPORT fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance inst)
NOT_PROVIDED("fmi3EvaluateDiscreteStates", "this FMU has no clocks")
EXPORT fmi3Status fmi3GetOutputDerivatives(fmi3Instance inst, const fmi3ValueReference vr[],
                                           size_t n, const fmi3Int32 o[], fmi3Float64 v[],
                                           size_t nv)
{ (void)vr; (void)n; (void)o; (void)v; (void)nv;
  NOT_PROVIDED("fmi3GetOutputDerivatives", "maxOutputDerivativeOrder is 0") }
EXPORT fmi3Status fmi3ActivateModelPartition(fmi3Instance inst, fmi3ValueReference c,
                                             fmi3Float64 t)
{ (void)c; (void)t; NOT_PROVIDED("fmi3ActivateModelPartition", "co-simulation only") }

/* Model exchange: not this FMU's interface (fmi3InstantiateModelExchange refuses), but every
 * function of fmi3Functions.h is exported, as masters look them all up */
#define ME_ONLY(call) NOT_PROVIDED(call, "a model-exchange function; this FMU is co-simulation only")
EXPORT fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance inst)
ME_ONLY("fmi3EnterContinuousTimeMode")
EXPORT fmi3Status fmi3CompletedIntegratorStep(fmi3Instance inst, fmi3Boolean np,
                                              fmi3Boolean *e, fmi3Boolean *t)
{ (void)np; (void)e; (void)t; ME_ONLY("fmi3CompletedIntegratorStep") }
EXPORT fmi3Status fmi3SetTime(fmi3Instance inst, fmi3Float64 t)
{ (void)t; ME_ONLY("fmi3SetTime") }
EXPORT fmi3Status fmi3SetContinuousStates(fmi3Instance inst, const fmi3Float64 x[], size_t n)
{ (void)x; (void)n; ME_ONLY("fmi3SetContinuousStates") }
EXPORT fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance inst, fmi3Float64 d[], size_t n)
{ (void)d; (void)n; ME_ONLY("fmi3GetContinuousStateDerivatives") }
EXPORT fmi3Status fmi3GetEventIndicators(fmi3Instance inst, fmi3Float64 e[], size_t n)
{ (void)e; (void)n; ME_ONLY("fmi3GetEventIndicators") }
EXPORT fmi3Status fmi3GetContinuousStates(fmi3Instance inst, fmi3Float64 x[], size_t n)
{ (void)x; (void)n; ME_ONLY("fmi3GetContinuousStates") }
EXPORT fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance inst, fmi3Float64 x[], size_t n)
{ (void)x; (void)n; ME_ONLY("fmi3GetNominalsOfContinuousStates") }
EXPORT fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance inst, size_t *n)
{ (void)n; ME_ONLY("fmi3GetNumberOfEventIndicators") }
EXPORT fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance inst, size_t *n)
{ (void)n; ME_ONLY("fmi3GetNumberOfContinuousStates") }
