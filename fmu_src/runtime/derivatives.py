"""Directional derivatives of the outputs with respect to the inputs (FMI 2.0 Sec 2.1.9, FMI 3.0
Sec 2.2.11): ``fmi2GetDirectionalDerivative`` and ``fmi3GetDirectionalDerivative`` of the FMU.

In co-simulation the continuous states are not exposed: the knowns are the Real inputs, the
unknowns the Real outputs, at the current communication point, in the current mode.  With
x = [q, u_ind] held, an output y = g(t, x, p) of the mode's monitors (gillespie2005 eq 13-16:
the full speeds, contact forces, the automaton's outputs, the multipliers of Sec 5.4) changes
with the inputs p_in only through what they drive at the same instant: accelerations,
constraint and contact forces, laws that use them, and dependent speeds u_dep = -(B_dep^-1)
(B_ind u_ind + C) where C involves an input (a belt's speed).  FMI's directional derivative
is dy = (dg/dp_in) dv for the seed dv.

How dg/dp_in is computed, per compiled mode (``Jacobian.of``):

- ``symbolic``: the mode's eq 16 is solved symbolically (``compile.mode_parts`` kind
  "explicit", the embedding formulation): its monitor expressions are differentiated by the
  input symbols with symengine and the derivatives compiled once per mode (exact up to the
  rounding of their evaluation);
- ``numeric`` (every other mode: a linear solve in the step, the compiled-terms path, the
  driven modes, the multipliers/projection/soft formulations): central differences of the
  compiled monitors with one Richardson extrapolation, D = (4 D(h/2) - D(h)) / 3, which
  removes the h^2 term of the error; h = 2^-10 max(1, |p_j|).  For outputs affine in an input
  (applied loads in Kane's equations, gillespie2005 eq 1-4) the difference is exact up to
  rounding; otherwise the error is O(h^4) f^(5) plus rounding eps |f| / h, about 1e-10
  relative for smooth outputs of unit scale.

Which outputs may depend on which inputs is declared in modelDescription.xml's ModelStructure
(``dependencies``): from the symbols of each output's expressions, the same in every mode
(``output_dependence``).  An output not declared dependent has derivative 0.
"""

from __future__ import annotations

import ctypes

import numpy as np
from pythonfmu.enums import Fmi2Status

from fmu_src.runtime.fmi2 import OK, CallError

# the C loader's callback (loader.h ``DirectionalDerivative``): unknowns, knowns, seed, result
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_uint), ctypes.c_size_t,
                            ctypes.POINTER(ctypes.c_uint), ctypes.c_size_t,
                            ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double))
RICHARDSON_STEP = 2.0 ** -10    # h / max(1, |p_j|) of the numeric path


def output_dependence(sc) -> dict:
    """Output name -> whether it may depend on the inputs at the same instant (FMI 2.0
    ModelStructure ``dependencies``), for every output of the scenario ``sc``.

    An automaton output whose expressions (its own and every mode's override) involve only
    coordinates q, time, parameters and discrete variables does not; one that involves speeds
    u does only if a velocity constraint B u + C = 0 (eq 7) involves an input (u_dep then
    follows it); one that involves anything else (contact forces, multipliers, inputs, laws)
    may.  Multipliers do; discrete variables, simulator attributes and the constraint residual
    (zero by construction of u_dep) do not."""
    aut = sc.automaton
    m = aut.model
    inputs = {str(s) for s in m.inputs}
    if not inputs:
        return {v.name: False for v in sc.outputs}
    held = ({str(s) for s in m.q} | {str(s) for s in m.params} | set(aut.discrete) | {"t"})
    speeds = {str(s) for s in m.u}
    u_follows = any(inputs & _names(e) for c in aut.constraints.values()
                    for e in list(c.B) + [c.C])
    overrides = {}
    for md in aut.modes.values():
        for name, e in md.outputs:
            overrides.setdefault(name, []).append(e)
    out = {}
    for v in sc.outputs:
        kind, _ = sc.source(v.name)
        if kind == "lambda":
            out[v.name] = True
            continue
        if kind != "mon" or v.name not in aut.outputs:
            out[v.name] = False        # discrete, attributes, constraint_residual
            continue
        names = set()
        for e in [aut.outputs[v.name]] + overrides.get(v.name, []):
            names |= _names(m.sym(e))
        extra = names - held
        out[v.name] = bool(extra) and (not extra <= speeds or u_follows)
    return out


def _names(expr):
    from embed.model.model import to_symengine     # an expression, never text
    return {str(s) for s in to_symengine(expr).free_symbols}


def declare(root, slave, dependence):
    """modelDescription.xml (FMI 2.0, ``root``): providesDirectionalDerivative and each output's
    ``dependencies`` on the Real inputs (1-based ModelVariables indices; "" when none)."""
    root.find("CoSimulation").set("providesDirectionalDerivative", "true")
    variables = list(root.find("ModelVariables"))
    index = {v.get("name"): i for i, v in enumerate(variables, start=1)}
    real_inputs = [str(i) for i, v in enumerate(variables, start=1)
                   if v.get("causality") == "input" and v.find("Real") is not None]
    for u in root.iterfind("ModelStructure/Outputs/Unknown"):
        name = variables[int(u.get("index")) - 1].get("name")
        deps = real_inputs if dependence.get(name) else []
        u.set("dependencies", " ".join(deps))
        if deps:
            u.set("dependenciesKind", " ".join(["dependent"] * len(deps)))
    return index


class Jacobian:
    """dmon/dp_in of one compiled mode at (t, x, p): ``symbolic`` or ``numeric`` (module doc)."""

    def __init__(self, compiled, rows, in_idx, fn=None):
        self.compiled, self.rows, self.in_idx, self._fn = compiled, rows, in_idx, fn
        self.method = "symbolic" if fn is not None else "numeric"

    @classmethod
    def of(cls, sim, rows):
        """The Jacobian of the monitor entries ``rows`` of ``sim``'s current mode w.r.t. the
        inputs, built once per mode and kept in the scenario's mode library."""
        compiled = sim.state.compiled_mode
        o = sim.n_params
        in_idx = list(range(o, o + sim.n_inputs))
        rows = tuple(rows)
        key = ("directional derivative", id(compiled), rows)
        return sim.library.shared(key, lambda: cls._build(sim, compiled, rows, in_idx))

    @classmethod
    def _build(cls, sim, compiled, rows, in_idx):
        if (getattr(compiled, "path", "") != "symbolic" or sim.formulation.full_state
                or not hasattr(compiled, "_step")):
            return cls(compiled, rows, in_idx)
        parts = sim.forms.mode_parts(compiled.key)
        if parts.get("kind") != "explicit":
            return cls(compiled, rows, in_idx)
        import symengine as se       # here: the first directional derivative of the mode
        from embed.modes.functions import lambdify
        from embed.model.model import to_symengine
        from embed.model.symbols import TIME
        mon, params = parts["mon"], parts["params"]
        syms = [to_symengine(params[j]) for j in in_idx]     # symbols, never text
        exprs = [se.diff(mon[r], s) for r in rows for s in syms]
        fn = lambdify([TIME] + parts["x"] + list(params), exprs,
                      f"the directional derivatives of mode {compiled.key}")
        return cls(compiled, rows, in_idx, fn)

    def __call__(self, t, x, p):
        """The matrix d mon[rows] / d p_in at (t, x, p): len(rows) x number of inputs."""
        nr, ni = len(self.rows), len(self.in_idx)
        if self._fn is not None:
            arg = np.concatenate(([t], x, p))
            return np.asarray(self._fn(arg), dtype=float).reshape(nr, ni)
        rows = list(self.rows)
        J = np.empty((nr, ni))
        for k, j in enumerate(self.in_idx):
            h = RICHARDSON_STEP * max(1.0, abs(p[j]))

            def central(step):
                pp, pm = p.copy(), p.copy()
                pp[j] += step
                pm[j] -= step
                return (self.compiled.monitors(t, x, pp)[rows]
                        - self.compiled.monitors(t, x, pm)[rows]) / (2 * step)
            J[:, k] = (4 * central(h / 2) - central(h)) / 3
        return J


def refresh_outputs(sim):
    """The monitors at the current state with the current inputs (after an input was set at a
    communication point: direct feedthrough, FMI 2.0 Sec 4.2.1).  The next advance evaluates
    them again from the same arguments, so stepping is unchanged."""
    st = sim.state
    if st.compiled_mode is not None:
        st.mon = st.compiled_mode.monitors(st.t, st.x, st.pvec)


def directional_derivative(slave, unknowns, knowns, seed):
    """dv_unknown = sum_j d(unknown)/d(known_j) seed_j for the slave's Real outputs
    ``unknowns`` and Real inputs ``knowns`` (value references), in the current mode.  A
    CallError names a bad value reference or length; nothing changes."""
    unknowns, knowns = list(unknowns), list(knowns)
    if len(seed) != len(knowns):
        raise CallError(f"{len(knowns)} known value references but {len(seed)} seed values")
    seed = np.asarray(seed, dtype=float)
    if not np.isfinite(seed).all():
        raise CallError(f"the seed dvKnown {seed.tolist()} is not finite")
    names_in = [v.name for v in slave.sc.inputs]
    cols = []
    for vr in knowns:
        v, causality = _spec(slave, vr)
        if v.name not in names_in or v.type != "Real":
            raise CallError(f"value reference {vr} ({v.name}, {causality.name} {v.type}) is not "
                            f"a known of a directional derivative here: give the Real inputs "
                            f"{[n for n in names_in if _is_real_input(slave, n)]}")
        cols.append(names_in.index(v.name))
    dep = slave.dependence
    readers = []
    for vr in unknowns:
        v, causality = _spec(slave, vr)
        if causality.name != "output" or v.type != "Real" or v.name not in dep:
            raise CallError(f"value reference {vr} ({v.name}, {causality.name} {v.type}) is not "
                            "an unknown of a directional derivative here: give Real outputs")
        readers.append((v.name, dep[v.name]))
    sim = slave.sim
    if sim is None:
        raise CallError("the instance did not initialize (see the log)")
    slave.read_inputs()
    out = np.zeros(len(unknowns))
    live = [(k, _row(slave, name)) for k, (name, d) in enumerate(readers) if d]
    live = [(k, r) for k, r in live if r is not None]
    if live and cols:
        st = sim.state
        jac = Jacobian.of(sim, sorted({r for _, r in live}))
        J = jac(st.t, st.x, st.pvec)
        slave.log(f"fmi2GetDirectionalDerivative: mode {sim.mode_number} {st.compiled_mode.key}"
                  f", {jac.method} Jacobian of {len(jac.rows)} outputs", Fmi2Status.ok)
        where = {r: i for i, r in enumerate(jac.rows)}
        full = np.zeros(len(slave.sc.inputs))
        np.add.at(full, cols, seed)
        for k, r in live:
            out[k] = float(J[where[r]] @ full)
        if not np.isfinite(out).all():
            raise CallError(f"the directional derivative is not finite ({out.tolist()}) at "
                            f"t = {st.t:.9g} s in mode {sim.mode_number}")
    return out.tolist()


def _is_real_input(slave, name):
    return any(v.name == name and v.type == "Real" for v in slave.sc.inputs)


def _spec(slave, vr):
    spec = slave.variables.specs.get(int(vr))
    if spec is None:
        raise CallError(f"unknown value reference {vr}")
    return spec


def _row(slave, name):
    """The monitor index an output is read from in the current mode, or None (a multiplier
    of a constraint that is not active: 0 here)."""
    kind, where = slave.sc.source(name)
    if kind == "mon":
        return where
    st = slave.sim.state
    if kind == "lambda" and where in st.active:
        return st.compiled_mode.sl_lambda.start + list(st.active).index(where)
    return None


def install(slave):
    """Give the FMU's C loader the route to ``slave.get_directional_derivative`` (the ctypes
    callback is kept on the slave; the loader forgets it with the instance).  Messages the
    call logs are delivered before it returns."""
    loader = slave.loader
    lib = loader._lib
    setter = getattr(lib, "embed_fmi2_set_directional_derivative", None) if lib else None
    if setter is None:
        return
    ref = __import__("weakref").ref(slave)

    def call(z, nz, v, nv, dv, df):
        s = ref()
        if s is None:
            return 3
        try:
            res = s.get_directional_derivative([z[i] for i in range(nz)],
                                               [v[i] for i in range(nv)],
                                               [dv[i] for i in range(nv)])
            for i, x in enumerate(res[:nz]):
                df[i] = x
            return OK
        finally:
            for msg in s.log_queue:
                loader.log_now(int(msg.status), msg.msg)
            s.log_queue.clear()

    slave._dd_callback = CALLBACK(call)
    setter.argtypes = [CALLBACK]
    setter(slave._dd_callback)
