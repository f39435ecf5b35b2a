"""The fence of any profile: its terms and its symbolic embedding formed once a process with h an
undefined function of q4, so that a profile announced at run time steps at once, given only
its jet (h and three derivatives at s = q4 - L) as a ``functions.Tape``.  gillespie2005 Sec 5.5
(the numeric path: ``profile_family``, ``ProfileTerms``) and eq 11-16 (the symbolic path:
``profile_family_modes``, ``jet_mode.JetMode``); ``install_profile`` puts both in the
simulator's caches for one profile.
"""

from __future__ import annotations

import copy

import numpy as np

from embed import Constraint, ConstraintSet, Guard, Mode, holonomic
from embed.background.worker import superseded
from embed.codegen.native import OPT_FAST, compile_program
from embed.codegen.program import Program
from embed.modes.functions import Tape, lambdify
from embed.base.errors import ModelDefinitionError
from embed.base.lazy import LazyModule
from embed.base.lazy import symengine as se
from embed.modes.numeric import ConstraintTerms, EntryTerms, Role, constraint_exprs, lam_symbol

from .jet_mode import N_JET, JetMode, bindable, raw_call
from .modes import FENCE, FENCE_BASE, fence_mode

# the package's symbols (SIGMA, PROFILE_H, JET, LF_JET: ``symbolic``) imported at their first
# use: a scenario image's stepping process imports this module without symengine (issue 30)
SYM = LazyModule(__package__ + ".symbolic")

def profile_family(sim, backend="llvm"):
    """Every term of the numeric path (gillespie2005 Sec 5.5) of a fence of any profile h: its
    two constraints' [B, C], gamma and [Phi, Phi_q], its mode's outputs and switching
    conditions, formed with h an undefined function of q4 and compiled as one function of
    (t, q, u, forces, lambda, p, JET, L_f), JET = (h, h', h'', h^(3)) at s = q4 - L (gamma needs
    the third derivative).  Formed and compiled once a process; a profile announced at run
    time then needs only its jet compiled (``ProfileTerms``).  Its constraint set's entry terms
    (``numeric.EntryTerms``) likewise.  Returns (function, layout: the slice of each role, by
    "x", "y" and "monitors"; the family's mode; entry terms), shared by the simulators of the
    scenario (``ModeLibrary.shared``).

    Parameters
    ----------
    sim : embed.hybrid.simulator.Simulator
        a simulator of disk_fence.
    backend : str
        symengine's Lambdify backend.

    Returns
    -------
    (function, layout, mode, entry terms)
    """
    return sim.library.shared("profile_family", lambda: _form_profile_family(sim, backend))


def _form_profile_family(sim, backend):
    m = sim.model
    cons, mode = fence_mode("_any", None, SYM.LF_JET, mode_id=0)
    q4 = se.Symbol("q4")
    F = SYM.PROFILE_H(q4)
    J = SYM.JET
    to_jet = {F.diff(q4, 3): J[3], F.diff(q4, 2): J[2], F.diff(q4): J[1], F: J[0]}
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
    outs, guards = sim.forms.mode_exprs(mode.id, mode)
    add("monitors", "monitors", list(outs) + list(guards))
    extra = list(SYM.JET) + [SYM.LF_JET]
    args = ([SYM.TIME] + list(m.q) + list(m.u) + list(m.forces)
            + [lam_symbol(c) for c in mode.constraints] + list(sim.psyms) + extra)
    fn = lambdify(args, exprs, "the terms of the fence of any profile", backend)
    entry = EntryTerms(m, ConstraintSet(family), list(sim.psyms) + extra, backend)
    return (fn, layout, mode, entry)


class ProfileTerms:
    """The terms of one announced profile as one function of (t, q, u, forces, lambda, p), for
    ``numeric.Role``: the family's function (``profile_family``) called with the profile's jet
    at s = q4 - L and its length appended; the jet called with its buffers' addresses bound
    (``jet_mode.raw_call``, made at the first call: the jet may still be loading before)."""

    __slots__ = ("fn", "jet", "n_in", "i_L", "buf", "s", "fresh", "out", "_jet", "_fn",
                 "_last")

    def __init__(self, fn, jet, L_f, i_L):
        self.fn, self.jet, self.i_L = fn, jet, i_L
        self.n_in = fn.n_in - N_JET - 1
        self.buf = np.zeros(fn.n_in)
        self.buf[-1] = L_f
        self.s = np.zeros(1)
        self.fresh = True
        self._jet = self._fn = self._last = None

    def __getstate__(self):          # a copy has buffers of its own, and binds them anew
        return {k: getattr(self, k) for k in ("fn", "jet", "n_in", "i_L", "buf", "s", "fresh")}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)
        self._jet = self._fn = self._last = None

    def bind(self):
        """The jet's call bound now if it has loaded (as ``JetMode.bind``), and the family's
        function's into a buffer of our own (``raw_call``: its C function itself where it is
        object code, else its ``unsafe_real``; what its ordinary call runs after checking the
        argument: 2-7 us of each of the 2-3 calls of a projection on the fence warm, more in
        an event step; issue 30, tails)."""
        if self._jet is None and bindable(self.jet):
            self._jet = raw_call(self.jet, self.s, (self.buf, self.n_in))
        if self._fn is None and bindable(self.fn):
            self.out = np.zeros(self.fn.n_out)
            self._fn = raw_call(self.fn, self.buf, self.out)

    def __call__(self, args):
        # the roles of one evaluation (Phi of each constraint in a projection, haug_pavesic2023
        # eq 13) ask the same arguments in turn: the last values, where the arguments are
        # the same bits, are what the call would give again (one call of the whole family's
        # terms is tens of microseconds of an event step)
        key = (args.tobytes() if isinstance(args, np.ndarray) and args.dtype == np.float64
               else None)
        last = self._last
        if key is not None and last is not None and last[0] == key:
            return last[1].copy()
        b, n = self.buf, self.n_in
        b[:n] = args
        s = args[I_Q4] - args[self.i_L]
        if s != self.s[0] or self.fresh:     # the roles of one evaluation share one jet
            self.s[0] = s
            self.fresh = False
            if self._jet is None:
                self._jet = raw_call(self.jet, self.s, (self.buf, n))
            self._jet()
        if self._fn is None:
            self.bind()
        if self._fn is None:
            out = self.fn(b)
        else:
            self._fn()
            out = self.out.copy()
        self._last = (key, out.copy())
        return out


I_Q4 = 4       # q4 among (t, q1, ..., q4, ...)


def jet_function(profile):
    """The jet of a profile, s -> (h, h', h'', h^(3)) (``FenceProfile.jet``), as a ``Tape``:
    built in the worker and loaded in a fraction of what an LLVM function takes to build and to
    load in a 1 kHz loop (docs/design.md, facts).

    Parameters
    ----------
    profile : FenceProfile

    Returns
    -------
    embed.modes.functions.Tape of one input (s) and four outputs.
    """
    return Tape([se.Symbol(SYM.SIGMA.name)], profile.jet())


def worker_jet(profile):
    """The jet the fast worker sends for a profile: its ``Tape`` (``jet_function``) up to
    TAPE_MAX_OPS operations, else the jet compiled to machine code (``native.compile_program``):
    a tape runs in Python, 0.1-0.3 ms a call for a product of ten sine factors (1,300
    operations), four calls an RK4 step on the family's embedding, against 5-10 us compiled.
    The tape also when a later announcement of the same instance is already waiting
    (``embed.background.worker.superseded``).  The same bits either way (the same operations in order, IEEE arithmetic and the same libm;
    tested).  The stepping process loads a compiled jet in its loader thread
    (``native.load_later``), off the stepping path (issue 30, tails).

    Parameters
    ----------
    profile : FenceProfile

    Returns
    -------
    Tape or embed.codegen.native.NativeFunction, of one input (s) and four outputs.
    """
    prog = Program(1)
    outs = prog.emit(list(profile.jet()), {se.Symbol(SYM.SIGMA.name): 0})
    if len(prog.ops) <= TAPE_MAX_OPS or superseded():
        # a later announcement of this instance waits: its fence will replace this one,
        # whose tape is the answer at once (a storm of announcements compiles only the last)
        return jet_function(profile)
    # codegen level 0: compiled in a third of level 1's time, as fast a call (the fence is
    # ready sooner)
    return compile_program(prog, outs, "the jet of an announced fence", OPT_FAST)


TAPE_MAX_OPS = 200     # a larger jet is compiled (``worker_jet``)


# the choices of two dependent speeds among u1, u2, u4 (u3, the spin, is in no fence row)
FAMILY_DEPS = ((0, 1), (0, 3), (1, 3))


def profile_family_modes(sim):
    """The fence of any profile embedded symbolically (eq 11-16) once a process, for each
    choice of dependent speeds (FAMILY_DEPS), with h an undefined function of q4: its
    right-hand side (eq 16) and monitors compiled (LLVM) as functions of (t, x, p, JET, L_f),
    given a profile's jet at every evaluation by ``JetMode``.  A profile announced at run
    time then steps on a symbolic embedding at once, with nothing compiled or loaded but its
    jet.

    Parameters
    ----------
    sim : embed.hybrid.simulator.Simulator
        a simulator of disk_fence.

    Returns
    -------
    {dependent speeds: (meta, rhs, monitors)}, shared by the simulators of the scenario.
    """
    return sim.library.shared("profile_modes", lambda: _form_profile_family_modes(sim))


def _form_profile_family_modes(sim):
    m = sim.model
    cons, mode = fence_mode("_any", None, SYM.LF_JET, mode_id=0)
    cset = ConstraintSet([holonomic(m, n, phi) for n, phi in cons.items()])
    args = None
    out = {}
    for dep in FAMILY_DEPS:
        from embed.embedding.equations import EXPLICIT_OPS_OFFLINE
        parts = sim.forms.mode_parts((0, cset.key, dep), EXPLICIT_OPS_OFFLINE, mode=mode, cset=cset)
        if parts["kind"] != "explicit":
            raise ModelDefinitionError(f"the fence of any profile is not explicit at {dep}")
        f, mon = ([_jet_of(e) for e in parts[k]] for k in ("f", "mon"))
        args = [SYM.TIME] + parts["x"] + parts["params"] + list(SYM.JET) + [SYM.LF_JET]
        meta = {k: parts[k] for k in ("ind", "dep", "sizes")}
        meta["nx"] = len(parts["x"])
        out[dep] = (meta, lambdify(args, f, f"the fence of any profile at {dep}", "llvm"),
                    lambdify(args, mon, f"the fence's monitors at {dep}", "llvm"))
    return out


def _jet_of(e):
    """e with the derivatives of PROFILE_H(q4) replaced by JET (none beyond the third)."""
    q4 = se.Symbol("q4")
    F = SYM.PROFILE_H(q4)
    J = SYM.JET
    e = e.subs({F.diff(q4, 3): J[3], F.diff(q4, 2): J[2], F.diff(q4): J[1], F: J[0]})
    if e.atoms(se.Derivative) or e.has(F):
        raise ModelDefinitionError(f"the fence of any profile needs more than JET: {e}")
    return e


def install_profile(sim, uid, L_f, jet):
    """Install fence ``uid`` (a profile with jet ``jet``, a Tape, and length ``L_f``): the
    family's terms (``profile_family``) as the roles of its constraints' B, C, gamma and Phi,
    of its mode's monitors and of its entry terms, and the family's symbolic embedding
    (``JetMode``) as its mode for every choice of dependent speeds.  Its constraints and mode
    are stubs named as ``fence_mode`` names them (their expressions are the slow worker's).
    A fence installed already (by this simulator or one that shares its caches) stays as it is: its number says what it is (``fence_uid``).

    Parameters
    ----------
    sim : embed.hybrid.simulator.Simulator
    uid : int
        the fence's number (``modes.fence_uid``).
    L_f : float
        the fence's length.
    jet : embed.modes.functions.Tape or embed.codegen.native.NativeFunction
        s -> (h, h', h'', h^(3)) (``jet_function``, ``worker_jet``).

    Returns
    -------
    int, the fence's mode id (FENCE_BASE + uid).
    """
    return install_prepared(sim, prepare_profile(sim, uid, L_f, jet))


def prepare_profile(sim, uid, L_f, jet):
    """What ``install_profile`` installs for fence ``uid``, made without changing the
    simulator or its caches (the loader thread may make it while the stepping goes on: 0.2-0.5
    ms of a step otherwise; issue 30, tails): (mode, constraint stubs, the constraint terms,
    the monitors' role, the entry terms and the JetMode of each choice of dependent speeds),
    the installs left out (None) where the caches have the fence already.  Its arguments are
    ``install_profile``'s."""
    m = sim.model
    fam, layout, family, entry = profile_family(sim)
    mode = Mode(FENCE_BASE + uid, f"fence {uid}", (f"fence{uid}_x", f"fence{uid}_y"), (),
                tuple(Guard(g.name, None, g.direction) for g in family.guards), (), FENCE)
    # stubs (B empty; C and Phi plain zeros: no symbol is formed in a stepping process that
    # has none, a scenario image's)
    stubs = [Constraint(name, (), 0, 0) for name in mode.constraints]
    if sim.library.has_constraint_terms(mode.constraints[0]):   # the shared caches have it
        return mode, stubs, None
    n, n_p, i_L = m.n, len(sim.psyms), sim.pnames.index("L")
    terms = ProfileTerms(fam, jet, L_f, fam.n_in - N_JET - 1 - n_p + i_L)
    p_at = list(range(terms.n_in - n_p, terms.n_in))
    tq = [0] + list(range(1, 1 + n)) + p_at
    tqu = [0] + list(range(1, 1 + 2 * n)) + p_at
    known = sim.automaton.constraints
    cterms = [(name, ConstraintTerms(
        m, known.get(name, stub), sim.psyms, fns=(Role(terms, tq, layout[role]["BC"]),
                                                  Role(terms, tqu, layout[role]["gamma"]),
                                                  Role(terms, tq, layout[role]["phi"]))))
        for name, stub, role in zip(mode.constraints, stubs, "xy")]
    monitors = Role(terms, None, layout["monitors"]["monitors"])
    mine = copy.copy(entry)        # the event step's one call, for this profile
    mine.key = tuple(sorted(mode.constraints))
    mine.fn = ProfileTerms(entry.fn, jet, L_f, 1 + 2 * n + i_L)
    modes = [(key, JetMode(key, meta, f, mon, jet, L_f, i_L)) for key, meta, f, mon in
             (((mode.id, mine.key, dep), meta, f, mon)
              for dep, (meta, f, mon) in profile_family_modes(sim).items())]
    for made in [terms, mine.fn] + [jm for _, jm in modes]:
        made.bind()        # the C calls bound here, not in the disk's first step on the fence
    return mode, stubs, (cterms, monitors, mine, modes)


def install_prepared(sim, prepared):
    """Install what ``prepare_profile`` made (in the stepping thread): returns the fence's mode
    id.  A fence the caches got meanwhile (another simulator sharing them) stays as it is."""
    mode, stubs, parts = prepared
    sim.forms.know_mode(mode, stubs)
    if parts is None or sim.library.has_constraint_terms(mode.constraints[0]):
        return mode.id
    cterms, monitors, mine, modes = parts
    for name, ct in cterms:
        sim.library.install_constraint_terms(name, ct)
    sim.mode_compiler.numeric_terms().install_mode(mode.id, monitors,
                                                   lam_names=mode.constraints)
    sim.library.install_entry_terms(mine.key, mine)
    for key, jm in modes:
        sim.library.install(key, jm)
    return mode.id
