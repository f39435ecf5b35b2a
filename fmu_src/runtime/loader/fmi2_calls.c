/* The fmi2 functions on FMU states (FMI 2.0 2.1.8), the slave's extra routes (FMI 3.0-only
 * variables, dependencies, directional derivatives) and the status inquiries, split from
 * fmi2_loader.c (its call frame: loader.h's BEGIN/END). */
#define _GNU_SOURCE
#include <stdlib.h>

#include "loader.h"

/* ---- FMU states (FMI 2.0 2.1.8) -------------------------------------------------------------- */

/* The link to the state `s` in I's list, or NULL: `s` is compared, never dereferenced, so a
 * freed, foreign or made-up handle is recognised as such. */
static Saved **find_state(Inst *I, fmi2FMUstate s)
{
    Saved **at = &I->states;
    while (*at && (void *)*at != s) at = &(*at)->next;
    return *at ? at : NULL;
}

#define NOT_OURS "is not a state of this instance that is not freed yet (freed already, or " \
    "from another instance)"

/* "If on entry *FMUstate == NULL, a new allocation is required. If *FMUstate != NULL, then
 * *FMUstate points to a previously returned FMUstate": that one is overwritten. */
EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s)
{
    BEGIN("fmi2GetFMUstate");
    if (!s) END(refuse(I, "fmi2GetFMUstate", "the FMUstate argument is NULL"));
    Saved **at = NULL;
    if (*s && !(at = find_state(I, *s))) END(refuse(I, "fmi2GetFMUstate", "*FMUstate " NOT_OURS));
    Saved *w = at ? *at : calloc(1, sizeof *w);
    if (!w) END(refuse(I, "fmi2GetFMUstate", "out of memory"));
    fmi2FMUstate inner = NULL;
    fmi2Status r = status_of(I, B.GetFMUstate(I->inner, &inner));
    if (r >= fmi2Error || !inner) {           /* the slave could not take it: nothing kept */
        if (inner && r != fmi2Fatal) B.FreeFMUstate(I->inner, &inner);
        if (!at) free(w);
        END(r > fmi2Error ? r : fmi2Error);
    }
    if (at) {
        B.FreeFMUstate(I->inner, &w->inner);  /* the old copy of a reused handle */
    } else {
        w->next = I->states;
        I->states = w;
        *s = w;
    }
    w->inner = inner;
    END(r);
}

EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s)
{
    BEGIN("fmi2SetFMUstate");
    if (!s) END(refuse(I, "fmi2SetFMUstate", "the FMUstate is NULL"));
    Saved **at = find_state(I, s);
    if (!at) END(refuse(I, "fmi2SetFMUstate", "the FMUstate " NOT_OURS));
    END(status_of(I, B.SetFMUstate(I->inner, (*at)->inner)));
}

/* "If a null pointer is provided, the call is ignored. The function returns a null pointer
 * in argument FMUstate": a second free of the same variable is harmless. */
EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s)
{
    BEGIN("fmi2FreeFMUstate");
    if (!s) END(refuse(I, "fmi2FreeFMUstate", "the FMUstate argument is NULL"));
    /* fmusim 0.0.39 (FMISaveFMUStateToFile) passes the state itself, not its address: a live
     * handle of this instance is never the address of a master's variable, so it is freed
     * and noted in the debug log (a warning would make fmusim exit with status 1 after a
     * correct run); the master's variable cannot be set to NULL */
    Saved **self = find_state(I, (fmi2FMUstate)s);
    if (self) {
        Saved *w = *self;
        *self = w->next;
        fmi2Status r = status_of(I, B.FreeFMUstate(I->inner, &w->inner));
        free(w);
        filter_logger(I, NULL, fmi2OK, NULL, "fmi2FreeFMUstate: given the FMUstate "
                      "instead of its address (FMI 2.0 2.1.8, FMI 3.0 2.2.6.4); it is freed, "
                      "but the master's handle is not set to NULL");
        END(r);
    }
    if (!*s) END(fmi2OK);
    Saved **at = find_state(I, *s);
    if (!at) END(refuse(I, "fmi2FreeFMUstate", "*FMUstate " NOT_OURS));
    Saved *w = *at;
    *at = w->next;
    fmi2Status r = status_of(I, B.FreeFMUstate(I->inner, &w->inner));
    free(w);
    *s = NULL;
    END(r);
}

EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *n)
{
    BEGIN("fmi2SerializedFMUstateSize");
    Saved **at = s ? find_state(I, s) : NULL;
    if (!at) END(refuse(I, "fmi2SerializedFMUstateSize", "the FMUstate %s",
                        s ? NOT_OURS : "is NULL"));
    if (!n) END(refuse(I, "fmi2SerializedFMUstateSize", "the size argument is NULL"));
    END(status_of(I, B.SerializedFMUstateSize(I->inner, (*at)->inner, n)));
}

/* The buffer must hold fmi2SerializedFMUstateSize bytes; a smaller one is refused (pythonfmu
 * wrote a truncated state and answered fmi2OK) and a larger one gets that many bytes
 * (pythonfmu read past the end of the state). */
EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte b[], size_t n)
{
    BEGIN("fmi2SerializeFMUstate");
    Saved **at = s ? find_state(I, s) : NULL;
    if (!at) END(refuse(I, "fmi2SerializeFMUstate", "the FMUstate %s", s ? NOT_OURS : "is NULL"));
    if (!b) END(refuse(I, "fmi2SerializeFMUstate", "serializedState[] is NULL"));
    size_t need = 0;
    fmi2Status r = status_of(I, B.SerializedFMUstateSize(I->inner, (*at)->inner, &need));
    if (r >= fmi2Error) END(r);
    if (n < need)
        END(refuse(I, "fmi2SerializeFMUstate", "a buffer of %zu bytes is given; the state needs "
                   "%zu (fmi2SerializedFMUstateSize); nothing was written", n, need));
    END(status_of(I, B.SerializeFMUstate(I->inner, (*at)->inner, b, need)));
}

/* A new state from bytes; bytes that are not a state of this FMU are refused by the slave
 * (fmi2Error and its reason logged) and nothing is kept. */
EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte b[], size_t n,
                                          fmi2FMUstate *s)
{
    BEGIN("fmi2DeSerializeFMUstate");
    if (!s) END(refuse(I, "fmi2DeSerializeFMUstate", "the FMUstate argument is NULL"));
    if (!b || !n)
        END(refuse(I, "fmi2DeSerializeFMUstate", "serializedState[] is %s", b ? "empty" : "NULL"));
    Saved *w = calloc(1, sizeof *w);
    if (!w) END(refuse(I, "fmi2DeSerializeFMUstate", "out of memory"));
    fmi2FMUstate inner = NULL;
    fmi2Status r = status_of(I, B.DeSerializeFMUstate(I->inner, b, n, &inner));
    if (r >= fmi2Error || !inner) {
        if (inner && r != fmi2Fatal) B.FreeFMUstate(I->inner, &inner);
        free(w);
        END(r > fmi2Error ? r : fmi2Error);
    }
    w->inner = inner;
    w->next = I->states;
    I->states = w;
    *s = w;
    END(r);
}

int embed_extra(Inst *I, int op, unsigned vr, double *values, size_t n)
{
    if (!I->extra || I->dead) return op == EXTRA_SIZE ? -1 : fmi2Error;
    Inst *outer = current;
    I->override_status = -1;
    current = I;
    fast_sync(I);
    if (op == EXTRA_SET && I->fast) I->fast->on = 0;   /* Python rearms after its next step */
    int r = I->extra(op, vr, values, n);
    if (op != EXTRA_SIZE) r = status_of(I, (fmi2Status)r);
    current = outer;
    return r;
}

long embed_dependencies(Inst *I, unsigned vr, unsigned *out, size_t n)
{
    if (!I->deps || I->dead) return -1;
    Inst *outer = current;
    current = I;
    long r = I->deps(vr, out, n);
    current = outer;
    return r;
}

/* FMI 2.0 2.1.9: dvUnknown = (d unknowns / d knowns) dvKnown, here the Real outputs w.r.t. the
 * Real inputs at the communication point (fmu_src/runtime/derivatives.py).  The arrays are
 * checked here, the value references and the instance's state by the slave: fmi2Error, never
 * a forward to pythonfmu (whose binary answers this call with an error of its own). */
EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[],
                                               size_t nu, const fmi2ValueReference z[], size_t nz,
                                               const fmi2Real dv[], fmi2Real df[])
{
    BEGIN("fmi2GetDirectionalDerivative");
    const char *fn = "fmi2GetDirectionalDerivative";
    if (nu && !u) END(refuse(I, fn, "vUnknown_ref[] is NULL with nUnknown = %zu", nu));
    if (nu && !df) END(refuse(I, fn, "dvUnknown[] is NULL with nUnknown = %zu", nu));
    if (nz && !z) END(refuse(I, fn, "vKnown_ref[] is NULL with nKnown = %zu", nz));
    if (nz && !dv) END(refuse(I, fn, "dvKnown[] is NULL with nKnown = %zu", nz));
    if (!I->dd) END(refuse(I, fn, "the slave gave no directional derivatives (not built by "
                           "this project's builder?)"));
    if (!nu) END(fmi2OK);
    END(status_of(I, (fmi2Status)I->dd(u, nu, z, nz, dv, df)));
}
EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                              size_t n, const fmi2Integer o[], const fmi2Real v[])
{ FORWARD(SetRealInputDerivatives, vr, n, o, v); }
EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                               size_t n, const fmi2Integer o[], fmi2Real v[])
{ FORWARD(GetRealOutputDerivatives, vr, n, o, v); }

EXPORT fmi2Status fmi2CancelStep(fmi2Component c)
{
    Inst *I = (Inst *)c;
    if (!I) return fmi2Error;
    filter_logger(I, NULL, fmi2Error, NULL, "fmi2CancelStep: fmi2DoStep never returns fmi2Pending "
        "here (canRunAsynchronuously is false), there is nothing to cancel");
    return fmi2Error;
}

/* Status inquiries (FMI 2.0 section 4.2.3): what the slave cannot tell gives fmi2Discard. */
EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *v)
{
    (void)s;
    return c && v ? fmi2Discard : fmi2Error;
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
    (void)s;
    return c && v ? fmi2Discard : fmi2Error;
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
    (void)s;
    return c && v ? fmi2Discard : fmi2Error;
}
