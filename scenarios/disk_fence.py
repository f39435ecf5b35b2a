"""A disk on a ramp meeting a fence announced at run time: gillespie2005 Example 2 (Sec 6.2, Fig 8-11).

Coordinates q1, q2 (the disk centre), q3 (its rotation) and q4, the path parameter of the
contact point S on the ramp-plus-fence path; u_i = dq_i/dt.  q4 has no inertia: it is
fixed by the contact constraints, and parked (u4 = 0) in free flight.  The ramp runs
from O at angle phi (t = (cos phi, sin phi), n = (-sin phi, cos phi) towards the disk)
and ends at P, q4 = L.  Modes:

- 1 free flight (3 dof): the disk touching the ramp is a plastic impact (e = 0): the
  momentum-consistent activation jump of mueller eq 7 (frictionless contact);
- 2 on the ramp (2 dof): centre = q4 t + r n, two configuration constraints;
- 3 on a fence (2 dof): centre = P + s t + h(s) n + r N(s), s = q4 - L, for the fence
  announced last (``embed.geometry``: an arc of radius R or a height profile given as
  text), all reported as 3: the arc family and the cubic family h = c2 s^2 + c3 s^3 are
  compiled at set-up (announcing one sets discrete variables).  Any other profile steps at
  once on the fence of any profile, formed once with h an undefined function of q4 and
  given the profile's jet, h and three derivatives (``profile_family``: its terms;
  ``profile_family_modes`` and ``JetMode``: its symbolic embedding); the fast worker checks
  the text and differentiates it in a few ms.  The slow worker then embeds the profile on
  its own, its RK4 step composed into one function, which replaces the family's mode (a
  profile with abs() keeps the family's).

Leaving: the normal force N turning tensile (mode 1), the ramp's end q4 = L (onto the
fence if one is known, else into free flight), back from the fence onto the ramp
(q4 = L), the fence's end (free flight).  The contact is smooth: the multipliers of the
two contact constraints are the force on the disk centre, N its normal component.
"""

from __future__ import annotations

import copy
import hashlib
import math

import numpy as np
import sympy as sp
from sympy.physics.mechanics import Point, ReferenceFrame, RigidBody, dynamicsymbols, inertia

import time

import symengine as se

from embed import (Automaton, Constraint, ConstraintSet, Guard, Jump, Mode, Model, Scenario,
                   Var, engine_outputs, holonomic, motion)
from embed.background import Relay
from embed.compile import Layout, Tape, lambdify
from embed.embedding import EXPLICIT_OPS_OFFLINE
from embed.errors import ModelDefinitionError
from embed.geometry import (GEOMETRY_BAD_PARAMETER, SIGMA, FenceProfile, GeometryError,
                            time_limit, validate)
from embed.model import TIME, to_symengine
from embed.numeric import ConstraintTerms, EntryTerms, Role, constraint_exprs, lam_symbol

FREE, RAMP, FENCE = 1, 2, 3
FENCE_BASE = 100      # mode id of a fence: FENCE_BASE + its unique number
_UIDS = iter(range(1, 1 << 30))   # numbers of fences made by announce() in this process


def fence_uid(text, L_f):
    """The number of the free-form fence ``text`` of length ``L_f``: from its description, so
    that it is the same in every process (a serialized FMU state names its fence by it) and
    the same fence announced again is the one already installed."""
    d = hashlib.blake2b(f"{text}\0{float(L_f)!r}".encode(), digest_size=8).digest()
    return 1 + int.from_bytes(d, "little") % ((1 << 30) - 1)


def symbols():
    q = dynamicsymbols("q1:5")
    u = dynamicsymbols("u1:5")
    m, J, r, phi, L, g = sp.symbols("m J r phi L g")
    return q, u, (m, J, r, phi, L, g)


def normal_force(cx, cy, nx, ny):
    """N = lambda . n: the contact constraints' multipliers are the force on the disk centre."""
    S = se.Symbol if isinstance(nx, se.Basic) else sp.Symbol
    return S("lambda_" + cx) * nx + S("lambda_" + cy) * ny


def build_model():
    q, u, (m, J, r, phi, L, g) = symbols()
    frame = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(frame, 0)
    C = O.locatenew("C", q[0] * frame.x + q[1] * frame.y)
    C.set_vel(frame, u[0] * frame.x + u[1] * frame.y)
    B = frame.orientnew("B", "Axis", [q[2], frame.z])
    B.set_ang_vel(frame, u[2] * frame.z)
    disk = RigidBody("disk", C, B, m, (inertia(frame, 0, 0, J), C))
    loads = [(C, -m * g * frame.y)]
    kd = [qi.diff() - ui for qi, ui in zip(q, u)]
    return Model(frame, q, u, kd, [disk], loads, params=[m, J, r, phi, L, g], name="disk_fence")


def fence_mode(uid, profile: FenceProfile | None, L_f, mode_id=None):
    """The constraints and the mode of a fence, numbered ``uid`` (unique in the process).
    ``L_f`` may be a number or a symbol (a discrete variable).  ``profile`` None: the fence
    of any profile, h an undefined function of q4 (``profile_family``); a profile with abs()
    has only that family's embedding."""
    if profile is not None and profile.h.has(sp.Abs):
        raise ModelDefinitionError(f"{profile.describe()}: a profile with abs() has no symbolic "
                                   "fence mode (its terms would differentiate sign()); use "
                                   "install_profile")
    x, y, nx, ny, q, L = _centre_and_normal_se(profile)
    cx, cy = f"fence{uid}_x", f"fence{uid}_y"
    N = normal_force(cx, cy, nx, ny)
    L_f = sp.Float(L_f) if isinstance(L_f, (int, float)) else L_f     # a number or a symbol
    L_f = to_symengine(L_f) if isinstance(x, se.Basic) else L_f
    return ({cx: (q[0] - x), cy: (q[1] - y)},
            Mode(FENCE_BASE + uid if mode_id is None else mode_id, f"fence {uid}", (cx, cy), (), (
                Guard("fence_end", L + L_f - q[3], -1),
                Guard("back_to_ramp", q[3] - L, -1),
                Guard("release", N, -1)),
                outputs=(("N", N),), report=FENCE))


def _centre_and_normal_se(profile):
    """Disk centre P + s t + h(s) n + r N(s) and the fence normal N at s = q4 - L, formed in
    symengine (embed.geometry's conventions; some ten times faster than in sympy).  With
    ``profile`` None, h is the undefined function PROFILE_H of q4 (d/dq4 = d/ds)."""
    q = [se.Symbol(f"q{i}") for i in range(1, 5)]
    r, phi, L = se.symbols("r phi L")
    if profile is None:
        S, sub = q[3] - L, {}
        h = PROFILE_H(q[3])
        h1 = h.diff(q[3])
    else:
        S = se.Symbol(SIGMA.name)
        sub = {S: q[3] - L}
        h = to_symengine(profile.h)      # SIGMA becomes the plain symengine symbol of its name
        h1 = h.diff(S)
    tx, ty, nx, ny = se.cos(phi), se.sin(phi), -se.sin(phi), se.cos(phi)
    w = se.sqrt(1 + h1 ** 2)
    Nx, Ny = (nx - h1 * tx) / w, (ny - h1 * ty) / w
    x = (L * tx + S * tx + h * nx + r * Nx).subs(sub)
    y = (L * ty + S * ty + h * ny + r * Ny).subs(sub)
    return x, y, Nx.subs(sub), Ny.subs(sub), q, L


# --------------------------------------------------- the fence of any profile, compiled once
PROFILE_H = se.Function("fence_h")
JET = tuple(se.Symbol(f"fence_h{k}") for k in range(4))    # d^k h / ds^k at s = q4 - L
LF_JET = se.Symbol("fence_Lf")


def profile_family(sim, backend="llvm"):
    """Every term of the numeric path (gillespie2005 Sec 5.5) of a fence of any profile h: its
    two constraints' [B, C], gamma and [Phi, Phi_q], its mode's outputs and switching
    conditions, formed with h an undefined function of q4 and compiled as one function of
    (t, q, u, forces, lambda, p, JET, L_f), JET = (h, h', h'', h^(3)) at s = q4 - L (gamma needs
    the third derivative).  Formed and compiled once a process; a profile announced at run
    time then needs only its jet compiled (``ProfileTerms``).  Its constraint set's entry terms
    (``numeric.EntryTerms``) likewise.  Returns (function, layout: the slice of each role, by
    "x", "y" and "monitors"; the family's mode; entry terms), kept in ``sim.cache``."""
    if "profile_family" in sim.cache:
        return sim.cache["profile_family"]
    m = sim.model
    cons, mode = fence_mode("_any", None, LF_JET, mode_id=0)
    q4 = se.Symbol("q4")
    F = PROFILE_H(q4)
    to_jet = {F.diff(q4, 3): JET[3], F.diff(q4, 2): JET[2], F.diff(q4): JET[1], F: JET[0]}
    exprs, layout = [], {}

    def add(name, role, es):
        layout.setdefault(name, {})[role] = slice(len(exprs), len(exprs) + len(es))
        exprs.extend(e.subs(to_jet) for e in es)

    family = []
    for name, phi in cons.items():
        c = holonomic(m, name, phi)
        for role, es in constraint_exprs(m, c).items():
            add(name[-1], role, es)
        family.append(Constraint(name, tuple(b.subs(to_jet) for b in c.B), c.C.subs(to_jet),
                                 c.phi.subs(to_jet)))
    outs, guards = sim.mode_exprs(mode.id, mode)
    add("monitors", "monitors", list(outs) + list(guards))
    extra = list(JET) + [LF_JET]
    args = ([TIME] + list(m.q) + list(m.u) + list(m.forces)
            + [lam_symbol(c) for c in mode.constraints] + list(sim.psyms) + extra)
    fn = lambdify(args, exprs, "the terms of the fence of any profile", backend)
    entry = EntryTerms(m, ConstraintSet(family), list(sim.psyms) + extra, backend)
    sim.cache["profile_family"] = (fn, layout, mode, entry)
    return sim.cache["profile_family"]


class ProfileTerms:
    """The terms of one announced profile as one function of (t, q, u, forces, lambda, p), for
    ``numeric.Role``: the family's function (``profile_family``) called with the profile's jet
    at s = q4 - L and its length appended."""

    __slots__ = ("fn", "jet", "n_in", "i_L", "buf", "s", "fresh")

    def __init__(self, fn, jet, L_f, i_L):
        self.fn, self.jet, self.i_L = fn, jet, i_L
        self.n_in = fn.n_in - len(JET) - 1
        self.buf = np.zeros(fn.n_in)
        self.buf[-1] = L_f
        self.s = np.zeros(1)
        self.fresh = True

    def __call__(self, args):
        b, n = self.buf, self.n_in
        b[:n] = args
        s = args[I_Q4] - args[self.i_L]
        if s != self.s[0] or self.fresh:     # the roles of one evaluation share one jet
            self.s[0] = s
            self.fresh = False
            self.jet.unsafe_real(self.s, b[n:n + len(JET)])
        return self.fn(b)


I_Q4 = 4       # q4 among (t, q1, ..., q4, ...)


def jet_function(profile):
    """The jet of a profile, s -> (h, h', h'', h^(3)) (``FenceProfile.jet``), as a ``Tape``:
    built in the worker in well under 1 ms and loaded in microseconds, where an LLVM function
    took 1-3 ms to build and 0.3-0.45 ms to load in a 1 kHz loop."""
    return Tape([se.Symbol(SIGMA.name)], profile.jet())


# the choices of two dependent speeds among u1, u2, u4 (u3, the spin, is in no fence row)
FAMILY_DEPS = ((0, 1), (0, 3), (1, 3))


def profile_family_modes(sim):
    """The fence of any profile embedded symbolically (eq 11-16) once a process, for each
    choice of dependent speeds (FAMILY_DEPS), with h an undefined function of q4: its
    right-hand side (eq 16) and monitors compiled (LLVM) as functions of (t, x, p, JET, L_f),
    given a profile's jet at every evaluation by ``JetMode``.  A profile announced at run
    time then steps on a symbolic embedding at once, with nothing compiled or loaded but its
    jet.  Returns {dep: (meta, rhs, monitors)}, kept in ``sim.cache``."""
    if "profile_modes" in sim.cache:
        return sim.cache["profile_modes"]
    m = sim.model
    cons, mode = fence_mode("_any", None, LF_JET, mode_id=0)
    cset = ConstraintSet([holonomic(m, n, phi) for n, phi in cons.items()])
    args = None
    out = {}
    for dep in FAMILY_DEPS:
        parts = sim.mode_parts((0, cset.key, dep), EXPLICIT_OPS_OFFLINE, mode=mode, cset=cset)
        if parts["kind"] != "explicit":
            raise ModelDefinitionError(f"the fence of any profile is not explicit at {dep}")
        f, mon = ([_jet_of(e) for e in parts[k]] for k in ("f", "mon"))
        args = [TIME] + parts["x"] + parts["params"] + list(JET) + [LF_JET]
        meta = {k: parts[k] for k in ("ind", "dep", "sizes")}
        meta["nx"] = len(parts["x"])
        out[dep] = (meta, lambdify(args, f, f"the fence of any profile at {dep}", "llvm"),
                    lambdify(args, mon, f"the fence's monitors at {dep}", "llvm"))
    sim.cache["profile_modes"] = out
    return out


def _jet_of(e):
    """e with the derivatives of PROFILE_H(q4) replaced by JET (none beyond the third)."""
    q4 = se.Symbol("q4")
    F = PROFILE_H(q4)
    e = e.subs({F.diff(q4, 3): JET[3], F.diff(q4, 2): JET[2], F.diff(q4): JET[1], F: JET[0]})
    if e.atoms(se.Derivative) or e.has(F):
        raise ModelDefinitionError(f"the fence of any profile needs more than JET: {e}")
    return e


class JetMode(Layout):
    """One announced profile's fence mode, on the family's symbolic embedding
    (``profile_family_modes``): the right-hand side and monitors are called with the
    profile's jet at s = q4 - L of the state they are evaluated at, so the classical RK4
    step runs stage by stage (as ``compile.rk4_stepwise``, in buffers of its own): the same
    minimal ODE as the profile embedded on its own, without compiling anything of it."""

    path = "symbolic"
    _W = np.array([1.0, 2.0, 2.0, 1.0])

    def __init__(self, key, meta, f, mon, jet, L_f, i_L):
        Layout.__init__(self, *meta["sizes"])
        self.key, self.n, self.nx = key, meta["sizes"][0], meta["nx"]
        self.ind, self.dep = tuple(meta["ind"]), tuple(meta["dep"])
        self.f, self.mon, self.jet = f.unsafe_real, mon.unsafe_real, jet.unsafe_real
        self.buf = b = np.zeros(f.n_in)        # [t, x, p, JET, L_f]
        b[-1] = L_f
        self.o_p = 1 + self.nx
        self.i_L = self.o_p + i_L
        self.bx, self.bj = b[1:self.o_p], b[f.n_in - 1 - len(JET):f.n_in - 1]
        self.s = np.zeros(1)
        self.k = np.zeros((4, self.nx))

    def _at(self, t):
        """The buffer's state (bx) at time t, with its jet."""
        b = self.buf
        b[0] = t
        self.s[0] = b[1 + 3] - b[self.i_L]            # s = q4 - L
        self.jet(self.s, self.bj)
        return b

    def _p(self, p):
        self.buf[self.o_p:self.o_p + p.size] = p

    def _call(self, fn, n, t, x, p):
        self._p(p)
        self.bx[:] = x
        out = np.empty(n)
        fn(self._at(t), out)
        return out

    def rhs(self, t, x, p):
        return self._call(self.f, self.nx, t, x, p)

    def monitors(self, t, x, p):
        return self._call(self.mon, self.n_mon, t, x, p)

    def rk4(self, t, h, x, p):
        """[x(t+h)..., monitors..., sum |x_i(t+h)|], as compile.rk4_stepwise."""
        self._p(p)
        bx, k, f = self.bx, self.k, self.f
        xn = x
        if h != 0.0:
            bx[:] = x
            f(self._at(t), k[0])
            np.multiply(k[0], h / 2, out=bx)
            bx += x
            f(self._at(t + h / 2), k[1])
            np.multiply(k[1], h / 2, out=bx)
            bx += x
            f(self._at(t + h / 2), k[2])
            np.multiply(k[2], h, out=bx)
            bx += x
            f(self._at(t + h), k[3])
            xn = x + (h / 6) * (self._W @ k)
        nx = self.nx
        out = np.empty(nx + self.n_mon + 1)
        out[:nx] = xn
        bx[:] = xn
        self.mon(self._at(t + h), out[nx:-1])
        out[-1] = np.abs(xn).sum()
        return out

def install_profile(sim, uid, L_f, jet):
    """Install fence ``uid`` (a profile with jet ``jet``, a Tape, and length ``L_f``): the
    family's terms (``profile_family``) as the roles of its constraints' B, C, gamma and Phi,
    of its mode's monitors and of its entry terms, and the family's symbolic embedding
    (``JetMode``) as its mode for every choice of dependent speeds.  Its constraints and mode
    are stubs named as ``fence_mode`` names them (their expressions are the slow worker's).  Returns the mode id.  A fence installed already (by this simulator or one
    that shares its caches) stays as it is: its number says what it is (``fence_uid``)."""
    m = sim.model
    fam, layout, family, entry = profile_family(sim)
    mode = Mode(FENCE_BASE + uid, f"fence {uid}", (f"fence{uid}_x", f"fence{uid}_y"), (),
                tuple(Guard(g.name, None, g.direction) for g in family.guards), (), FENCE)
    for name in mode.constraints:       # this simulator's view of the automaton
        sim.aut.constraints.setdefault(name, Constraint(name, (), se.Integer(0), se.Integer(0)))
    sim.aut.modes.setdefault(mode.id, mode)
    if mode.constraints[0] in sim.cache["cterms"]:      # the shared caches have it
        return mode.id
    n, n_p, i_L = m.n, len(sim.psyms), sim.pnames.index("L")
    terms = ProfileTerms(fam, jet, L_f, fam.n_in - len(JET) - 1 - n_p + i_L)
    p_at = list(range(terms.n_in - n_p, terms.n_in))
    tq = [0] + list(range(1, 1 + n)) + p_at
    tqu = [0] + list(range(1, 1 + 2 * n)) + p_at
    for name, role in zip(mode.constraints, "xy"):
        c = sim.aut.constraints[name]
        sl = layout[role]
        sim.cache["cterms"][name] = ConstraintTerms(
            m, c, sim.psyms, fns=(Role(terms, tq, sl["BC"]), Role(terms, tqu, sl["gamma"]),
                                  Role(terms, tq, sl["phi"])))
    sim.numeric_terms().install_mode(mode.id, Role(terms, None, layout["monitors"]["monitors"]),
                                     lam_names=mode.constraints)
    mine = copy.copy(entry)        # the event step's one call, for this profile
    mine.key = tuple(sorted(mode.constraints))
    mine.fn = ProfileTerms(entry.fn, jet, L_f, 1 + 2 * n + i_L)
    sim.cache["entry"][mine.key] = mine
    for dep, (meta, f, mon) in profile_family_modes(sim).items():
        key = (mode.id, mine.key, dep)
        sim.cache["mode"][key] = JetMode(key, meta, f, mon, jet, L_f, i_L)
    return mode.id


ARC = FENCE            # the arc family's mode: its radius and length are discrete variables
R_ARC, LF_ARC = sp.symbols("R_arc Lf_arc")
POLY = 4               # the polynomial family's mode: h = c2 s^2 + c3 s^3
POLY_C = sp.symbols("c2_poly c3_poly")
LF_POLY = sp.Symbol("Lf_poly")


def arc_family():
    """The parameterized fence of issue 4, an arc of radius R_arc tangent to the ramp at P with
    its centre on the normal at P, compiled with the automaton: announcing one only sets
    R_arc and Lf_arc.  (A free-form fence is embedded when it arrives.)"""
    return fence_mode("_arc", FenceProfile(R_ARC - sp.sqrt(R_ARC ** 2 - SIGMA ** 2), "arc"),
                      LF_ARC, mode_id=ARC)


def poly_family():
    """Polynomial fences tangent to the ramp at P, h(s) = c2 s^2 + c3 s^3, compiled with the
    automaton like the arc: a free-form text that is such a polynomial (found by the worker's
    checks) is used by setting the coefficients, with no embedding of its own.  (With a quartic
    term too the embedded equations exceed what is solved symbolically, and a step costs ten
    times as much.)"""
    h = sum((c * SIGMA ** k for k, c in enumerate(POLY_C, start=2)), sp.Integer(0))
    return fence_mode("_poly", FenceProfile(h, "poly"), LF_POLY, mode_id=POLY)


def poly_coefficients(profile):
    """(c2, c3) if the profile is h = c2 s^2 + c3 s^3 exactly (the polynomial family), else
    None."""
    h = profile.h
    if not h.is_polynomial(SIGMA):
        return None
    c = sp.Poly(h, SIGMA).all_coeffs()[::-1]
    n = 2 + len(POLY_C)
    if len(c) > n or any(v != 0 for v in c[:2]):
        return None
    c = [float(v) for v in c[2:]] + [0.0] * (n - len(c))
    return tuple(c) if all(math.isfinite(v) for v in c) else None


def over_ramp(d):
    """touch_ramp is watched only while the disk is above the ramp (not past its end)."""
    return d["over_ramp"] == 1.0


def build() -> Scenario:
    model = build_model()
    q, u, (m, J, r, phi, L, g) = symbols()
    tx, ty, nx, ny = sp.cos(phi), sp.sin(phi), -sp.sin(phi), sp.cos(phi)
    constraints = {
        "ramp_x": holonomic(model, "ramp_x", q[0] - (q[3] * tx + r * nx)),
        "ramp_y": holonomic(model, "ramp_y", q[1] - (q[3] * ty + r * ny)),
        "park": motion(model, "park", u[3]),
    }
    N_ramp = normal_force("ramp_x", "ramp_y", nx, ny)
    height = q[0] * nx + q[1] * ny - r          # distance of the disk from the ramp line
    modes = {
        FREE: Mode(FREE, "free flight", ("park",), (),
                   (Guard("touch_ramp", height, -1, enabled=over_ramp),),
                   outputs=(("N", sp.Integer(0)),)),
        RAMP: Mode(RAMP, "ramp", ("ramp_x", "ramp_y"), (), (
            Guard("ramp_end", L - q[3], -1),
            Guard("release", N_ramp, -1)), outputs=(("N", N_ramp),)),
    }

    def fence_id(ctx):
        uid = int(ctx.discrete["fence"])
        if uid == -1:
            return ARC
        if uid == -2:
            return POLY
        return FENCE_BASE + uid if uid > 0 and (FENCE_BASE + uid) in ctx.sim.aut.modes else None

    def transition(ctx, guard):
        if guard == "touch_ramp":
            x, y = ctx.q[0], ctx.q[1]
            phi_v, L_v = ctx.param("phi"), ctx.param("L")
            s = x * math.cos(phi_v) + y * math.sin(phi_v)
            if 0.0 <= s <= L_v:
                qn = np.array(ctx.q)
                qn[3] = s
                un = np.array(ctx.u)
                un[3] = un[0] * math.cos(phi_v) + un[1] * math.sin(phi_v)
                return Jump(RAMP, {"contact": 1.0}, q=qn, u=un, impact=True)
            return Jump(FREE)
        if guard == "release":
            return Jump(FREE, {"contact": 0.0, "over_ramp": float(ctx.mode == RAMP)})
        if guard == "fence_end":
            return Jump(FREE, {"contact": 0.0, "over_ramp": 0.0})
        if guard == "ramp_end":
            f = fence_id(ctx)
            return (Jump(f, {"contact": 1.0}) if f is not None
                    else Jump(FREE, {"contact": 0.0, "over_ramp": 0.0}))
        if guard == "back_to_ramp":
            return Jump(RAMP, {"contact": 1.0})
        raise AssertionError(f"no transition for {guard!r} in mode {ctx.mode}")

    def initial(ctx):
        return Jump(RAMP, {"contact": 1.0})

    outputs = {**{f"q{i + 1}": q[i] for i in range(4)}, **{f"u{i + 1}": u[i] for i in range(4)},
               "N": sp.Integer(0),
               "kinetic_energy": (m * (u[0] ** 2 + u[1] ** 2) + J * u[2] ** 2) / 2,
               "potential_energy": m * g * q[1]}
    arc_cons, arc = arc_family()
    for name, phi_c in arc_cons.items():
        constraints[name] = holonomic(model, name, phi_c)
    modes[ARC] = arc
    poly_cons, modes[POLY] = poly_family()
    for name, phi_c in poly_cons.items():
        constraints[name] = holonomic(model, name, phi_c)
    discrete = {"contact": 1.0, "fence": 0.0, "over_ramp": 1.0, "R_arc": 10.0, "Lf_arc": 6.7,
                **{str(c): 0.0 for c in POLY_C}, "Lf_poly": 6.7}
    aut = Automaton(model, constraints, modes, discrete, outputs, transition, initial)
    parameters = [
        Var("m", 1.0, "disk mass", "kg"), Var("J", 0.125, "central moment of inertia", "kg.m2"),
        Var("r", 0.5, "disk radius", "m"),
        Var("phi", -math.radians(5.0), "ramp angle (negative: the ramp descends along q4)", "rad"),
        Var("L", 25.3, "ramp length from O to P, where the fence begins", "m"),
        Var("g", 9.81, "gravitational acceleration", "m/s2"),
        Var("q4_start", 0.0, "initial path parameter of the contact point on the ramp", "m"),
        Var("u4_start", 0.0, "initial rate of q4", "m/s"),
        Var("q3_start", 0.0, "initial disk angle", "rad"),
        Var("u3_start", 0.0, "initial spin", "rad/s"),
    ]
    interface = [Var(f"q{i}", 0.0, desc, unit) for i, desc, unit in (
        (1, "x of the disk centre", "m"), (2, "y of the disk centre", "m"),
        (3, "disk angle", "rad"), (4, "path parameter of the contact point", "m"))]
    interface += [Var(f"u{i}", 0.0, f"rate of q{i}", "") for i in range(1, 5)]
    interface += [Var("N", 0.0, "normal force of the ramp or fence on the disk", "N"),
                  Var("kinetic_energy", 0.0, "kinetic energy", "J"),
                  Var("potential_energy", 0.0, "potential energy", "J"),
                  Var("contact", 1.0, "the disk touches the ramp or the fence", type="Boolean")]
    interface += engine_outputs(RAMP, "active mode: 1 free flight, 2 ramp, 3 fence")

    def initial_state(p):
        ph, rr = p["phi"], p["r"]
        s = p["q4_start"]
        qv = np.array([s * math.cos(ph) - rr * math.sin(ph), s * math.sin(ph) + rr * math.cos(ph),
                       p["q3_start"], s])
        us = p["u4_start"]
        uv = np.array([us * math.cos(ph), us * math.sin(ph), p["u3_start"], us])
        return qv, uv

    return Scenario("disk_fence", aut, parameters, [], interface, initial_state,
                    extra_outputs={"contact": ("discrete", "contact")},
                    positive=("m", "J", "r", "L", "g"), embedding="background",
                    precompile=True, extension=FenceGeometry)


def announce(sim, profile, L_f):
    """Make a fence known to a simulator now (its constraints and mode, embedded when first
    entered); the disk uses it from the next time it reaches the ramp's end, or at once if
    it is on an older fence."""
    cons, mode = fence_mode(next(_UIDS), profile, L_f)
    for name, phi in cons.items():
        sim.add_constraint(holonomic(sim.model, name, phi))
    sim.add_mode(mode)
    activate(sim, mode.id)
    return mode


def activate(sim, mode_id, **discrete):
    """Use fence mode ``mode_id`` from now on (switching to it at once if on a fence)."""
    sim.discrete = {**sim.discrete, **discrete,
                    "fence": {ARC: -1.0, POLY: -2.0}.get(mode_id, float(mode_id - FENCE_BASE))}
    sim._sync_discrete()
    if sim.mode is not None and sim.aut.modes[sim.mode].report == FENCE:
        sim.jump_to(mode_id, label="fence_switch")


def check_arc(R, L_f, r):
    """The arc's own checks (the parser's are not needed): R > r finite, 0 < L_f < R."""
    check_length(L_f)
    if not (isinstance(R, (int, float)) and math.isfinite(R) and R > r):
        raise GeometryError(f"fence_radius = {R!r} must be finite and larger than the disk "
                            f"radius {r}", code=GEOMETRY_BAD_PARAMETER, check="radius", value=R)
    if L_f >= R:
        raise GeometryError(f"fence_length = {L_f} must be below fence_radius = {R} (the arc "
                            "is a height profile: less than a quarter turn)",
                            code=GEOMETRY_BAD_PARAMETER, check="length", value=L_f)


def announce_arc(sim, R, L_f):
    """An arc fence (the parameterized family, compiled already): ready at once."""
    check_arc(R, L_f, sim.param("r"))
    activate(sim, ARC, R_arc=float(R), Lf_arc=float(L_f))


# ----------------------------------------------------------------- geometry at run time
WORKER_CALLS = ("prepare_fence",)


def profile_of(spec):
    """FenceProfile of an announcement: ("arc", R, L_f) or ("curve", text, L_f)."""
    kind, value, L_f = spec
    return FenceProfile.arc(value) if kind == "arc" else FenceProfile.from_text(value)


def check_length(L_f):
    if not (isinstance(L_f, (int, float)) and math.isfinite(L_f) and L_f > 0):
        raise GeometryError(f"fence_length = {L_f!r} must be a positive finite number",
                            code=GEOMETRY_BAD_PARAMETER, check="length", value=L_f)


def prepare_fence(sim, version, spec, pvec, rhs=False, uid=None):
    """Background work for fence ``version`` (gillespie2005 Sec 6.2, Fig 11), run in the fast
    worker: check the geometry (with a time limit); a cubic polynomial only sets the compiled
    family's coefficients; any other profile gets its jet, all the fence of any profile needs
    to step it at once (``install_profile``: "terms"), then its own constraints and mode, and
    the frames that ask the slow worker for their symbolic embedding, composed into one RK4
    step (seven times cheaper a step than the family's, which evaluates the jet stage by
    stage), at the partition expected where the fence begins ("embed"; with its right-hand
    side alone if ``rhs``: the adaptive solver).  ``uid``
    numbers the fence (the stepping process's, whose caches outlive a worker).  Yields the
    answers, each sent as one frame (the slow worker's requests as a ``Relay``)."""
    try:
        with time_limit():               # in the worker: GEOMETRY_TIMEOUT after 2 s
            check_length(spec[2])
            profile = profile_of(spec)
            validate(profile, spec[2], disk_radius=float(pvec[sim.pnames.index("r")]))
    except GeometryError as exc:
        yield ("rejected", version, exc.code, str(exc))
        return
    coeffs = poly_coefficients(profile)
    if coeffs is not None:               # a member of the compiled polynomial family
        yield ("ready", version, POLY, {**{str(c): v for c, v in zip(POLY_C, coeffs)},
                                        "Lf_poly": float(spec[2])})
        return
    uid = next(_UIDS) if uid is None else uid
    yield ("terms", version, uid, float(spec[2]), jet_function(profile))
    if profile.h.has(sp.Abs) or FENCE_BASE + uid in sim.aut.modes:
        return      # abs(): the family's embedding only (fence_mode); or embedded already
    cons, mode = fence_mode(uid, profile, spec[2])
    for name, phi in cons.items():
        sim.add_constraint(holonomic(sim.model, name, phi))
    sim.add_mode(mode)
    # the symbolic embedding, for the partition at the start of the fence, is the slow
    # worker's: these requests go to it directly, never through the stepping process
    sim.pvec[:] = pvec
    L, ph, r = (float(pvec[sim.pnames.index(k)]) for k in ("L", "phi", "r"))
    q = np.array([L * math.cos(ph) - r * math.sin(ph), L * math.sin(ph) + r * math.cos(ph), 0, L])
    active = tuple(sorted(mode.constraints))
    key = (mode.id, active, sim._partition(active, 0.0, q))
    yield Relay([("constraint", sim.aut.constraints[c]) for c in cons]
                + [("modedef", mode),
                   ("mode", key, {"entry": False, "compose_ops": COMPOSE_OPS, "rhs": rhs})],
                ("embed", version, key))


# a fence's monitors go into its composed RK4 step, whatever their size: one LLVM function
# to load instead of two (measured: 23-27 ms to compile either way for the profiles of the
# tests); its entry terms are the family's (install_profile), not the worker's
COMPOSE_OPS = 10 ** 6


def warm_worker(sim):
    """Run a worker's geometry path once before its first request (embed.worker): the first
    parse, checks and LLVM compile of a process cost several ms more than later ones."""
    pvec = np.array(sim.pvec)
    for part in prepare_fence(sim, 0, ("curve", "0.01*s**2*(1 + 0.1*sin(s))", 6.7), pvec,
                              uid=0):     # the stepping process numbers its fences from 1
        pass


class FenceGeometry:
    """The fence inputs of disk_fence.fmu (issue 4): announcements by fence_version, checked
    and differentiated in the fast background worker while the stepping goes on, the fence
    then stepped on the family's embedding, and on its own composed mode once the slow
    worker has it; answers installed one a step."""

    inputs = [
        Var("fence_radius", 10.0, "radius R of the arc fence (used when fence_curve is empty)",
            "m"),
        Var("fence_length", 6.7, "extent of the fence along the ramp direction beyond P", "m"),
        Var("fence_version", 0, "bump to announce the fence described by the other inputs",
            type="Integer"),
        Var("fence_curve", "", "fence height profile h(s) over the ramp line (s from P); empty: "
            "the arc of radius fence_radius", type="String"),
    ]
    outputs = [
        Var("geometry_status", 0, "0 ok; otherwise the embed.geometry code of the last rejected "
            "announcement (1 syntax, 2 not allowed, 3 not finite, 4 not tangent at P, "
            "5 not smooth, 6 curvature, 7 bad radius or length, 8 checks too slow)", type="Integer"),
        Var("embed_pending", 0.0, "an announced fence is being embedded", type="Boolean"),
        Var("embed_latency", 0.0, "wall seconds from the last accepted announcement to its "
            "fence mode being ready", "s"),
        Var("geometry_version_active", 0, "the fence version in use", type="Integer"),
    ]

    def __init__(self, sim, compiler, log):
        self.sim, self.compiler, self.log = sim, compiler, log
        self.values = {"geometry_status": 0, "embed_pending": 0.0, "embed_latency": 0.0,
                       "geometry_version_active": 0}
        self.requested = 0        # the newest version announced
        self.resolved = 0         # the newest version accepted or rejected: older answers
        #                           arriving later are dropped (never replace a newer fence)
        self.t_request = {}       # version -> when it was announced (perf_counter)
        self.texts = {}           # version -> fence_curve of announcements under way
        self.fences = []          # [uid, text, L_f] of the free-form fences installed
        # compiled now (LLVM, ~20 + 3 x 40 ms), not in a step, and each called once: the
        # first call of an LLVM function costs more than later ones (warm_up does the same
        # for the automaton's modes)
        fn, _, _, entry = profile_family(sim)
        for f in [fn, entry.fn] + [g for _, *fs in profile_family_modes(sim).values()
                                   for g in fs]:
            f(np.full(f.n_in, 0.5))

    def get(self, name):
        return self.values[name]

    def state(self):
        return {"values": dict(self.values), "requested": self.requested,
                "resolved": self.resolved,
                "fences": [list(f) for f in self.fences]}

    def set_state(self, s):
        """Restore; a free-form fence the state uses and this process has not installed (a
        serialized state restored elsewhere) is parsed, checked and installed again."""
        for uid, text, L_f in s.get("fences", []):
            if FENCE_BASE + int(uid) not in self.sim.aut.modes:
                profile = FenceProfile.from_text(text)
                validate(profile, L_f, disk_radius=self.sim.param("r"))
                install_profile(self.sim, int(uid), float(L_f), jet_function(profile))
                self.fences.append([int(uid), text, float(L_f)])
        self.values.update(s["values"])
        self.requested = s["requested"]
        self.resolved = s.get("resolved", self.requested)
        self.values["embed_pending"] = float(self.requested > self.resolved)

    def before_step(self, inputs):
        """Announce a new version; install what the worker has finished."""
        v = int(inputs["fence_version"])
        if v > self.requested:
            self.requested = v
            text = str(inputs["fence_curve"]).strip()
            spec = (("curve", text, float(inputs["fence_length"])) if text else
                    ("arc", float(inputs["fence_radius"]), float(inputs["fence_length"])))
            self.t_request[v] = time.perf_counter()
            self.values["embed_pending"] = 1.0
            try:
                check_length(spec[2])
                if spec[0] == "arc":        # the compiled arc family: ready at once
                    announce_arc(self.sim, spec[1], spec[2])
                    self._install(("ready", v, ARC, {}), arc=True)
                    return
                if self.compiler is None:
                    profile_of(spec)                # parse here (a whitelist, no eval); with a
                    # worker the parse and every check run there, off the stepping path
            except GeometryError as exc:
                self._install(("rejected", v, exc.code, str(exc)))
                return
            self.texts[v] = text
            uid = fence_uid(text, spec[2])
            if self.compiler is not None:
                # a later announcement waiting in the worker replaces this one there
                self.compiler.call("prepare_fence", v, spec, np.array(self.sim.pvec),
                                   self.sim.integrator.uses_rhs, uid, supersede="fence")
            else:
                # the first answer only: in this process the family's embedding serves the
                # fence; its own symbolic embedding (the rest) is for the slow worker
                self._install(next(prepare_fence(self.sim, v, spec, np.array(self.sim.pvec),
                                                 uid=uid)))
        if self.compiler is not None:
            # the answers the simulator's poll decoded in earlier steps (one a step); a step
            # that installs a fence's terms (loading its jet: 0.1-0.4 ms cold) decodes no more
            for _, part in self.compiler.call_results():
                self._install(part)
                if part[0] == "terms":
                    self.compiler.rest()

    def _install_terms(self, part):
        _, version, uid, L_f, jet = part
        mode_id = install_profile(self.sim, uid, L_f, jet)
        if not any(f[0] == uid for f in self.fences):
            self.fences.append([uid, self.texts.get(version, ""), L_f])
        self._install(("ready", version, mode_id))

    def _resolve(self, version):
        """Version ``version`` is decided now; older ones still under way never will be."""
        self.resolved = version
        self.values["embed_pending"] = float(self.requested > version)
        self.values["embed_latency"] = time.perf_counter() - self.t_request.get(
            version, time.perf_counter())
        for old in [k for k in self.t_request if k <= version]:
            self.t_request.pop(old)
            self.texts.pop(old, None)

    def _install(self, part, arc=False):
        sim, kind, version = self.sim, part[0], part[1]
        if kind in ("rejected", "terms", "ready") and version <= self.resolved:
            return      # an older announcement than one decided already: never replaces it
        if kind == "rejected":
            self._resolve(version)
            self.values["geometry_status"] = int(part[2])
            self.log(f"fence version {version} rejected, keeping version "
                     f"{self.values['geometry_version_active']}: {part[3]}")
        elif kind == "terms":
            self._install_terms(part)
        elif kind == "ready":
            self._resolve(version)
            self.values["geometry_status"] = 0
            self.values["geometry_version_active"] = version
            if not arc:                    # announce_arc has activated it
                activate(sim, part[2], **(part[3] if len(part) > 3 else {}))
        elif kind == "embed" and self.compiler is not None:
            # the slow worker embeds the fence on its own (the fast worker sent it the
            # requests); its answer reaches the simulator's poll_background like any other
            # submission, and replaces the family's mode
            sim.cache["submitted"].setdefault(part[2], time.perf_counter())
