/* Communication steps with no event, run here without entering Python (issue 30): the loop of
 * embed/hybrid/stepping.py (_run) for a mode whose step is one compiled call (fixed-step RK4),
 * with its arithmetic to the bit:
 *   RK4.step (embed/hybrid/integrators.py): t_next on the grid t0 + k h_max, cut at the end;
 *   the compiled step f([t, h, x, p, tail]) -> [x', monitors', sum |x'|] (or, monitors apart,
 *   f -> [x', sum |x'|] and fm([t + h, 0, x', p, tail]) -> monitors'; or a mode stepped
 *   stage by stage, its right-hand side with a jet at each stage: staged, below);
 *   state_mod.check_finite, events.due (level 0) and events.approaching on the guards;
 *   switching.after_step's tests (the projection: Python's, called back; a re-selection:
 *   Python's step);
 *   the armed update of a guard that became positive; st.t = t_next.
 * Anything else - a guard due or approaching (an event, a rehearsal), a non-finite value, a step
 * Python would refuse (check_step, the step budget) - and the whole communication step goes to
 * Python from its start, with nothing here changed: results are those of the Python path.
 * The slave arms the record (fmu_src/runtime/fast_step.py) after every call that may change its
 * state, and is synced (its sync callback) before any call reaches it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

enum { UNARMED, ARMED, HELD };      /* embed/hybrid/events.py */

static int steps(Inst *I, FastStep *F, double t, double h);
static int staged(const FastStages *S, int nx, int ny, const double *args, double *out);

int fast_do_step(Inst *I, double t, double h)
{
    FastStep *F = I->fast;
    if (!F) return 0;
    /* armed only when a doStep comes (a master that sets inputs at every step never is) */
    if (!F->on && F->armable && F->arm) F->arm();
    if (!F->on) return 0;           /* EMBED_FAST_STEP=0: the slave never arms it */
    if (!F->memo) return steps(I, F, t, h);
    /* a memo shared with other instances and Python's calls: under the GIL (loader.h) */
    static int (*ensure)(void);
    static void (*release)(int);
    if (!ensure) {
        release = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
        ensure = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    }
    if (!ensure || !release) return 0;
    int gil = ensure();
    int done = steps(I, F, t, h);
    release(gil);
    return done;
}

static int steps(Inst *I, FastStep *F, double t, double h)
{
    /* fmu_src/runtime/fmi2.py check_step: otherwise Python refuses it */
    double tc = F->t_comm, hm = F->h_max;
    if (!(isfinite(h) && h > 0)) return 0;
    if (!(isfinite(t) && fabs(t - tc) <= 1e-9 * fmax(fmax(1.0, fabs(tc)), h))) return 0;
    if (h / hm > F->max_steps) return 0;
    /* stepping.advance's checks */
    double T = t + h, ts = F->t, tn = F->t_next;
    if (!(isfinite(T) && T >= ts - F->event_tol)) return 0;
    if (ceil((T - ts) / hm - 1e-9) > F->max_steps) return 0;
    int nx = F->nx, ny = F->ny, ng = F->ng;
    if (ng > 64) return 0;
    int arm[64];
    memcpy(arm, F->armed, (size_t)ng * sizeof *arm);
    const double *cur = F->y;
    double *out = F->s1, *args = F->args;
    const double t0 = F->t0, gt = F->grid_tol;
    double steps = 0;
    int projected = 0;
    while (T - ts > F->event_tol) {
        if (++steps > F->max_steps) return 0;
        /* RK4.step with h_avail = T - ts */
        double te = ts + (T - ts);
        double k = floor((ts - t0) / hm + 1e-9) + 1;
        double t_next = t0 + k * hm;
        if (t_next - ts <= gt) t_next = t0 + (k + 1) * hm;
        if (te < t_next - gt) t_next = te;
        args[0] = ts;
        args[1] = t_next - ts;
        memcpy(args + 2, cur, (size_t)nx * sizeof *args);
        if (!F->stages)
            F->f(args, out);
        else if (!staged(F->stages, nx, ny, args, out))
            return 0;                   /* a tape's operation Python may refuse */
        if (F->fm) {                  /* CompiledMode.rk4 with its monitors apart */
            double sum = out[nx];
            args[0] = ts + args[1];
            args[1] = 0.0;
            memcpy(args + 2, out, (size_t)nx * sizeof *args);
            F->fm(args, out + nx);
            out[ny - 1] = sum;
        }
        for (int i = 0; i < ny; i++)
            if (!isfinite(out[i])) return 0;            /* Python raises it */
        const double *ga = cur + nx + F->g0, *gb = out + nx + F->g0;
        for (int i = 0; i < ng; i++) {
            if (!arm[i] || !F->enabled[i]) continue;
            if (gb[i] <= (arm[i] == ARMED ? 0.0 : -F->probe_g)) return 0;        /* due */
            if (arm[i] == ARMED && 0.0 < gb[i] && gb[i] < ga[i]
                && gb[i] <= F->approach_steps * (ga[i] - gb[i])
                && i != F->rehearsed) return 0;                              /* approaching */
        }
        /* switching.after_step: the projection by Python's callback (out projected in place,
         * its guards then the ones armed below, as Python's st.mon), a re-selection Python's */
        if (F->i_res >= 0 && out[F->i_res] > F->phi_tol) {
            if (!F->project || !F->project(t_next, out)) return 0;
            projected++;
        }
        if (F->i_kappa >= 0 && out[F->i_kappa] > F->kappa_max) return 0;
        ts = t_next;                                     /* accepted */
        tn = t_next;
        for (int i = 0; i < ng; i++)
            if (gb[i] > 0) arm[i] = ARMED;
        cur = out;                                       /* the record's y stays as it was */
        out = out == F->s1 ? F->s2 : F->s1;
    }
    if (cur != F->y) memcpy(F->y, cur, (size_t)ny * sizeof *cur);
    memcpy(F->armed, arm, (size_t)ng * sizeof *arm);
    F->t = ts;
    F->t_next = tn;
    F->t_comm = T;
    F->projected += projected;
    F->pending = 1;
    I->fast_steps++;
    return 1;
}

/* embed/modes/functions.py's _TAPE_OPS, in order (fast_step.py checks it) */
enum { ADD, SUB, MUL, DIV, POW, NEG, SQRT, FABS, SIGN, MAX, MIN, ATAN2, SIN, COS, TAN, ASIN,
       ACOS, ATAN, SINH, COSH, TANH, LOG, EXP };

/* Tape.unsafe_real on s, into out: 0 where a register is not finite.  Python's float operations
 * and math functions are IEEE's and the same libm's, but they raise where C gives inf or nan
 * (a division by zero, a domain or range error: the tape's outputs are then nan); such a step is
 * left to Python whole, so only finite results need be the same. */
static int tape(const FastStages *S, const double *s, double *out)
{
    double *r = S->regs;
    r[0] = s[0];
    for (const int *op = S->tape, *end = op + 4 * S->n_ops; op < end; op += 4) {
        double a = r[op[1]], b = op[2] >= 0 ? r[op[2]] : 0.0, y;
        switch (op[0]) {
        case ADD: y = a + b; break;
        case SUB: y = a - b; break;
        case MUL: y = a * b; break;
        case DIV: y = a / b; break;
        case POW: y = pow(a, b); break;
        case NEG: y = -a; break;
        case SQRT: y = sqrt(a); break;
        case FABS: y = fabs(a); break;
        case SIGN: y = a != 0.0 ? copysign(1.0, a) : 0.0; break;
        case MAX: y = a != a || a > b ? a : b; break;
        case MIN: y = a != a || a < b ? a : b; break;
        case ATAN2: y = atan2(a, b); break;
        case SIN: y = sin(a); break;
        case COS: y = cos(a); break;
        case TAN: y = tan(a); break;
        case ASIN: y = asin(a); break;
        case ACOS: y = acos(a); break;
        case ATAN: y = atan(a); break;
        case SINH: y = sinh(a); break;
        case COSH: y = cosh(a); break;
        case TANH: y = tanh(a); break;
        case LOG: y = log(a); break;
        case EXP: y = exp(a); break;
        default: return 0;
        }
        if (!isfinite(y)) return 0;
        r[op[3]] = y;
    }
    for (int i = 0; i < S->n_out; i++)
        out[i] = r[S->outs[i]];
    return 1;
}

/* One stage of JetMode.rk4: buf's state x + c kk (x where kk is NULL) at time t, its jet, and
 * the rates f into k (the products and sums in numpy's order: mul(kk, c), then + x); 0 where
 * the jet's tape gave no finite value */
static int stage(const FastStages *S, int nx, double t, const double *x, const double *kk,
                 double c, double *k)
{
    double *b = S->buf;
    b[0] = t;
    for (int i = 0; i < nx; i++)
        b[1 + i] = kk ? kk[i] * c + x[i] : x[i];
    S->s[0] = b[S->i_q] - b[S->i_L];            /* s = q4 - L */
    if (S->jet)
        S->jet(S->s, b + S->j0);
    else if (!tape(S, S->s, b + S->j0))
        return 0;
    if (k) S->f(b, k);
    return 1;
}

/* JetMode.rk4 (scenarios/disk_fence/jet_mode.py) to the bit: args = [t, h, x..., p...] ->
 * out = [x(t + h)..., monitors..., sum |x_i(t + h)|] (ny; the build contracts no a b + c into
 * an FMA: fmu_src/builder/binary.py) */
static int staged(const FastStages *S, int nx, int ny, const double *args, double *out)
{
    const double t = args[0], h = args[1], *x = args + 2;
    double *b = S->buf, *k = S->k;
    memcpy(b + 1 + nx, x + nx, (size_t)(S->j0 - 1 - nx) * sizeof *b);     /* p */
    const double *xn = x;
    if (h != 0.0) {
        const double h2 = h / 2, t2 = t + h / 2;
        if (!stage(S, nx, t, x, NULL, 0.0, k) || !stage(S, nx, t2, x, k, h2, k + nx)
            || !stage(S, nx, t2, x, k + nx, h2, k + 2 * nx)
            || !stage(S, nx, t + h, x, k + 2 * nx, h, k + 3 * nx))
            return 0;
        const double w = h / 6;
        for (int i = 0; i < nx; i++)
            out[i] = x[i] + w * (((k[i] + 2.0 * k[nx + i]) + 2.0 * k[2 * nx + i])
                                 + k[3 * nx + i]);
        xn = out;
    } else {
        memcpy(out, x, (size_t)nx * sizeof *out);
    }
    if (!stage(S, nx, t + h, xn, NULL, 0.0, NULL))
        return 0;
    S->mon(b, out + nx);
    double sum = 0.0;
    for (int i = 0; i < nx; i++)
        sum += fabs(out[i]);
    out[ny - 1] = sum;
    return 1;
}

int fast_get_real(Inst *I, const fmi2ValueReference *vr, size_t n, fmi2Real *v)
{
    FastStep *F = I->fast;
    if (!F || !F->on || !n || !vr || !v) return 0;
    for (size_t i = 0; i < n; i++) {
        int j = 0, m = F->nserved;
        while (j < m && F->served_vr[j] != vr[i]) j++;
        if (j == m) return 0;
        v[i] = F->served_at[j] >= 0 ? F->y[F->served_at[j]] : F->served_value[j];
    }
    return 1;
}

int fast_get_integer(Inst *I, const fmi2ValueReference *vr, size_t n, int *v, int boolean)
{
    FastStep *F = I->fast;
    if (!F || !F->on || !n || !vr || !v) return 0;
    for (size_t i = 0; i < n; i++) {
        int j = 0, m = F->nint;
        while (j < m && F->int_vr[j] != vr[i]) j++;
        if (j == m || F->int_boolean[j] != boolean) return 0;
        v[i] = F->int_value[j];
    }
    return 1;
}

void fast_sync(Inst *I)
{
    FastStep *F = I->fast;
    if (F && F->pending && F->sync) F->sync();
}
