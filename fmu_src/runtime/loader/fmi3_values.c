/* The FMI 3.0 functions that get and set the variables' values (FMI 3.0 2.2.6), on top of the
 * fmi2 layer's (fmi2_calls.c):
 *  - the types: Float64 is fmi2Real, Int32 fmi2Integer, Boolean fmi2Boolean (converted: bool
 *    against int), String fmi2String; the FMU has no variable of any other type, so a value
 *    reference given for one is refused as unknown (fmi3Error);
 *  - arrays (2.2.6.2, 2.4.7.3, <Dimension>): Float64 and Int32 variables FMI 2.0 does not show
 *    (disk_fence's fence_points[32][2]) are the slave's own (fmu_src/runtime/arrays.py), reached
 *    through its callback (loader.h ExtraVariables), their values row-major in values[]. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "fmi3_inst.h"

static int is_extra(const Inst *I, fmi3ValueReference vr)
{
    return I->extra && vr >= I->extra_first && vr - I->extra_first < I->extra_count;
}

static int any_extra(const Inst *I, const fmi3ValueReference vr[], size_t nvr)
{
    if (!I->extra || !vr) return 0;
    for (size_t i = 0; i < nvr; i++)
        if (is_extra(I, vr[i])) return 1;
    return 0;
}

/* FMI 3.0 2.2.6.2: values[] holds the values of the variables one after another, an array's
 * all its elements (row-major), nValues of them in all.  With a slave's array among them (its
 * size from the slave): a wrong nValues is refused before anything is set, the slave naming
 * the array; each array through the slave, each scalar through the fmi2 layer (get2/set2). */
static fmi3Status extra_values(Inst3 *J, const char *fn, int op, const fmi3ValueReference vr[],
                               size_t nvr, double *v, size_t nv,
                               fmi2Status (*one)(Inst *, const fmi2ValueReference *, double *))
{
    Inst *I = J->c2;
    size_t total = 0, last = 0;
    long last_size = -1;
    for (size_t i = 0; i < nvr; i++) {
        if (!is_extra(I, vr[i])) { total++; continue; }
        int n = embed_extra(I, EXTRA_SIZE, vr[i], NULL, 0);
        if (n < 0) return refuse3(J, fn, "value reference %u: the slave has no such variable",
                                  vr[i]);
        total += (size_t)n;
        last = i;
        last_size = n;
    }
    if (total != nv) {
        if (last_size >= 0 && nv + (size_t)last_size >= total)
            return (fmi3Status)embed_extra(I, EXTRA_WRONG_COUNT, vr[last], NULL,
                                           nv + (size_t)last_size - total);
        return refuse3(J, fn, "nValues = %zu but the variables of valueReferences[] have %zu "
                       "values; nothing was set", nv, total);
    }
    fmi3Status r = fmi3OK;
    size_t off = 0;
    for (size_t i = 0; i < nvr && r <= fmi3Warning; i++) {
        fmi3Status ri;
        if (is_extra(I, vr[i])) {
            size_t n = (size_t)embed_extra(I, EXTRA_SIZE, vr[i], NULL, 0);
            ri = (fmi3Status)embed_extra(I, op, vr[i], v + off, n);
            off += n;
        } else {
            ri = (fmi3Status)one(I, vr + i, v + off);
            off++;
        }
        if (ri > r) r = ri;
    }
    return r;
}

static fmi2Status set_real(Inst *I, const fmi2ValueReference *vr, double *v)
{ return fmi2SetReal(I, vr, 1, v); }
static fmi2Status get_real(Inst *I, const fmi2ValueReference *vr, double *v)
{
    if (*vr == EMBED_TIME_VR) { *v = I->last_ok_time; return fmi2OK; }     /* time, as below */
    return fmi2GetReal(I, vr, 1, v);
}
static fmi2Status set_int(Inst *I, const fmi2ValueReference *vr, double *v)
{ fmi2Integer k = (fmi2Integer)*v; return fmi2SetInteger(I, vr, 1, &k); }
static fmi2Status get_int(Inst *I, const fmi2ValueReference *vr, double *v)
{ fmi2Integer k = 0; fmi2Status r = fmi2GetInteger(I, vr, 1, &k); *v = k; return r; }

/* Int32 values with an array among them: through doubles (exact for every Int32) */
static fmi3Status extra_ints(Inst3 *J, const char *fn, int op, const fmi3ValueReference vr[],
                             size_t nvr, fmi3Int32 *v, size_t nv)
{
    if ((nvr && !vr) || (nv && !v))
        return refuse3(J, fn, "%s is NULL", !vr ? "valueReferences[]" : "values[]");
    double *d = calloc(nv ? nv : 1, sizeof *d);
    if (!d) return refuse3(J, fn, "out of memory");
    for (size_t i = 0; i < nv && op == EXTRA_SET; i++) d[i] = v[i];
    fmi3Status r = extra_values(J, fn, op, vr, nvr, d, nv, op == EXTRA_SET ? set_int : get_int);
    for (size_t i = 0; i < nv && op == EXTRA_GET && r <= fmi3Warning; i++) v[i] = (fmi3Int32)d[i];
    free(d);
    return r;
}

/* FMI 3.0 2.2.6.2: nValues is the number of values of the variables; with no array among them
 * it equals nValueReferences */
#define CHECK_VALUES(fn, vr, nvr, v, nv) \
    if ((nvr) != (nv)) return refuse3(J, fn, "nValues = %zu but nValueReferences = %zu (these " \
                                      "variables are scalars)", (size_t)(nv), (size_t)(nvr)); \
    if ((nvr) && (!(vr) || !(v))) return refuse3(J, fn, "%s is NULL with nValueReferences = %zu", \
                                                 !(vr) ? "valueReferences[]" : "values[]", \
                                                 (size_t)(nvr))

#define SAME(F3, F2, T) \
    EXPORT fmi3Status fmi3##F3(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, \
                               T v[], size_t nv) \
    { J_OF(inst); CHECK_VALUES("fmi3" #F3, vr, nvr, v, nv); \
      return (fmi3Status)fmi2##F2(J->c2, vr, nvr, v); }
EXPORT fmi3Status fmi3GetInt32(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                               fmi3Int32 v[], size_t nv)
{
    J_OF(inst);
    if (any_extra(J->c2, vr, nvr))
        return extra_ints(J, "fmi3GetInt32", EXTRA_GET, vr, nvr, v, nv);
    CHECK_VALUES("fmi3GetInt32", vr, nvr, v, nv);
    return (fmi3Status)fmi2GetInteger(J->c2, vr, nvr, v);
}

EXPORT fmi3Status fmi3SetInt32(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                               const fmi3Int32 v[], size_t nv)
{
    J_OF(inst);
    if (any_extra(J->c2, vr, nvr))
        return extra_ints(J, "fmi3SetInt32", EXTRA_SET, vr, nvr, (fmi3Int32 *)v, nv);
    CHECK_VALUES("fmi3SetInt32", vr, nvr, v, nv);
    return (fmi3Status)fmi2SetInteger(J->c2, vr, nvr, v);
}
SAME(GetString, GetString, fmi3String)
SAME(SetString, SetString, const fmi3String)

/* Float64: the slave's Reals, and the independent variable time (FMI 3.0 2.4.7.4), which the
 * loader answers: the instance's current time, its last communication point.  It cannot be set. */
static int has_time(const fmi3ValueReference vr[], size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (vr[i] == EMBED_TIME_VR) return 1;
    return 0;
}

EXPORT fmi3Status fmi3GetFloat64(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                 fmi3Float64 v[], size_t nv)
{
    J_OF(inst);
    if (any_extra(J->c2, vr, nvr)) {
        if (nv && !v) return refuse3(J, "fmi3GetFloat64", "values[] is NULL");
        if (J->mode == M_INSTANTIATED && has_time(vr, nvr))
            return refuse3(J, "fmi3GetFloat64", "time is known from "
                           "fmi3EnterInitializationMode on");
        return extra_values(J, "fmi3GetFloat64", EXTRA_GET, vr, nvr, v, nv, get_real);
    }
    CHECK_VALUES("fmi3GetFloat64", vr, nvr, v, nv);
    if (!has_time(vr, nvr)) return (fmi3Status)fmi2GetReal(J->c2, vr, nvr, v);
    fmi3Status r = fmi3OK;
    for (size_t i = 0; i < nvr && r <= fmi3Warning; i++) {
        if (vr[i] == EMBED_TIME_VR) {
            if (J->mode == M_INSTANTIATED) return refuse3(J, "fmi3GetFloat64", "time is known "
                                                          "from fmi3EnterInitializationMode on");
            v[i] = J->c2->last_ok_time;
        } else {
            fmi3Status ri = (fmi3Status)fmi2GetReal(J->c2, vr + i, 1, v + i);
            if (ri > r) r = ri;
        }
    }
    return r;
}

EXPORT fmi3Status fmi3SetFloat64(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                 const fmi3Float64 v[], size_t nv)
{
    J_OF(inst);
    if (any_extra(J->c2, vr, nvr) && !has_time(vr, nvr)) {     /* time: refused below */
        if (nv && !v) return refuse3(J, "fmi3SetFloat64", "values[] is NULL");
        return extra_values(J, "fmi3SetFloat64", EXTRA_SET, vr, nvr, (double *)v, nv, set_real);
    }
    CHECK_VALUES("fmi3SetFloat64", vr, nvr, v, nv);
    if (has_time(vr, nvr))
        return refuse3(J, "fmi3SetFloat64", "time (value reference %u) is the independent "
                       "variable: it cannot be set; nothing was set", EMBED_TIME_VR);
    return (fmi3Status)fmi2SetReal(J->c2, vr, nvr, v);
}

EXPORT fmi3Status fmi3GetBoolean(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                 fmi3Boolean v[], size_t nv)
{
    J_OF(inst);
    CHECK_VALUES("fmi3GetBoolean", vr, nvr, v, nv);
    fmi2Boolean *b = calloc(nvr ? nvr : 1, sizeof *b);
    if (!b) return refuse3(J, "fmi3GetBoolean", "out of memory");
    fmi3Status r = (fmi3Status)fmi2GetBoolean(J->c2, vr, nvr, b);
    if (r <= fmi3Warning)
        for (size_t i = 0; i < nvr; i++) v[i] = b[i] != fmi2False;
    free(b);
    return r;
}

EXPORT fmi3Status fmi3SetBoolean(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                 const fmi3Boolean v[], size_t nv)
{
    J_OF(inst);
    CHECK_VALUES("fmi3SetBoolean", vr, nvr, v, nv);
    fmi2Boolean *b = calloc(nvr ? nvr : 1, sizeof *b);
    if (!b) return refuse3(J, "fmi3SetBoolean", "out of memory");
    for (size_t i = 0; i < nvr; i++) b[i] = v[i] ? fmi2True : fmi2False;
    fmi3Status r = (fmi3Status)fmi2SetBoolean(J->c2, vr, nvr, b);
    free(b);
    return r;
}

/* The types this FMU has no variable of: any value reference given is unknown for that type */
fmi3Status no_such_type(fmi3Instance inst, const char *fn, const char *type,
                        const fmi3ValueReference vr[], size_t nvr)
{
    J_OF(inst);
    if (!nvr) return fmi3OK;
    if (!vr) return refuse3(J, fn, "valueReferences[] is NULL with nValueReferences = %zu", nvr);
    return refuse3(J, fn, "value reference %u is not a %s variable: this FMU has Float64, "
                   "Int32, Boolean and String variables only (modelDescription.xml)", vr[0], type);
}

#define NONE(F, T, CT) \
    EXPORT fmi3Status fmi3Get##F(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, \
                                 T v[], size_t nv) \
    { (void)v; (void)nv; return no_such_type(inst, "fmi3Get" #F, #F, vr, nvr); } \
    EXPORT fmi3Status fmi3Set##F(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, \
                                 const T v[], size_t nv) \
    { (void)v; (void)nv; return no_such_type(inst, "fmi3Set" #F, #F, vr, nvr); }
NONE(Float32, fmi3Float32, 0)
NONE(Int8, fmi3Int8, 0)
NONE(UInt8, fmi3UInt8, 0)
NONE(Int16, fmi3Int16, 0)
NONE(UInt16, fmi3UInt16, 0)
NONE(UInt32, fmi3UInt32, 0)
NONE(Int64, fmi3Int64, 0)
NONE(UInt64, fmi3UInt64, 0)

EXPORT fmi3Status fmi3GetBinary(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                size_t sizes[], fmi3Binary v[], size_t nv)
{ (void)sizes; (void)v; (void)nv; return no_such_type(inst, "fmi3GetBinary", "Binary", vr, nvr); }
EXPORT fmi3Status fmi3SetBinary(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                const size_t sizes[], const fmi3Binary v[], size_t nv)
{ (void)sizes; (void)v; (void)nv; return no_such_type(inst, "fmi3SetBinary", "Binary", vr, nvr); }
EXPORT fmi3Status fmi3GetClock(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                               fmi3Clock v[])
{ (void)v; return no_such_type(inst, "fmi3GetClock", "Clock", vr, nvr); }
EXPORT fmi3Status fmi3SetClock(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                               const fmi3Clock v[])
{ (void)v; return no_such_type(inst, "fmi3SetClock", "Clock", vr, nvr); }
