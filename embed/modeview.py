"""A simulator's view of its automaton and of the shared mode library (the compiled model).

``AutomatonView`` is the part of a ``Simulator`` that knows the model, the parameter vector
and what is compiled for them: each constraint's own terms (gillespie2005 Sec 5.5), the
entry terms of a constraint set (mueller eq 7), the compiled mode of a (mode, constraint set,
partition) on the symbolic path (eq 11-16, ``embed.forming``, ``embed.compile``) or on the
compiled-terms path (``embed.numeric``), and the background worker's answers (Sec 6.2).
Everything compiled goes to the ``ModeLibrary`` the simulators of a scenario share;
constraints and modes added at run time stay in this simulator's own view of the automaton
(the library's keys are unique names and ids).  See docs/design.md, "Data flow".
"""

from __future__ import annotations

import math
import time

import numpy as np

from .compile import make_mode
from .embedding import EXPLICIT_OPS_OFFLINE
from .errors import ConstraintRankError, InputError, ModelDefinitionError
from .numeric import NumericMode, NumericTerms


class AutomatonView:
    """Constraints, modes and their compiled forms, for a simulator (a mixin of ``Simulator``).

    Expects ``aut``, ``model``, ``psyms``, ``pnames``, ``params``, ``n_params``, ``state``,
    ``library``, ``embedding``, ``compiler``, ``integrator``, ``outputs``, ``embed_times``,
    ``_starting`` and ``_sync_discrete``."""

    # ------------------------------------------------------------ constraints
    def _entry(self, rows, t, q, u):
        """(K, B, [0; -(B u + C)], Phi) of the constraints ``rows`` at (t, q, u)
        (``EntryTerms``): one call where the set's entry terms were compiled at set-up
        (``warm_up``) or by the worker, else assembled from each constraint's own terms and
        the unconstrained mass matrix."""
        entry = self.library.entry_terms(tuple(row.name for row in rows))
        if entry is not None:
            return entry(t, q, u, self.pvec)
        n, m = self.model.n, len(rows)
        B, C = self.forms.constraint_rows(rows, t, q, self.pvec)
        K = np.zeros((n + m, n + m))
        K[:n, :n] = self.numeric_terms().mass(t, q, u, self.pvec)
        K[:n, n:] = B.T
        K[n:, :n] = B
        tq = np.concatenate(([t], q, self.pvec))
        phi = [row.phi(tq)[0] for row in rows if row.holonomic]
        return K, B, np.concatenate((np.zeros(n), -(B @ u + C))), np.array(phi)

    def add_constraint(self, c):
        """Make a constraint known at run time (it is compiled on its own, Sec 5.5)."""
        self.forms.add_constraint(c)
        if self.compiler is not None:
            self.compiler.announce(c)

    # ------------------------------------------------------------------ modes
    def add_mode(self, mode):
        """A mode defined at run time (a geometry announced by the master, say); its
        constraints must be known (``add_constraint``)."""
        self.forms.add_mode(mode)
        if self.library.terms is not None:
            outs, guards = self.forms.mode_exprs(mode.id)
            self.library.terms.add_mode(mode.id, mode.laws, outs, guards, mode.constraints)
        if self.compiler is not None:
            self.compiler.announce_mode(mode)

    def numeric_terms(self):
        """The unconstrained terms compiled once (Sec 5.5), built on first use."""
        if self.library.terms is None:
            ids = list(self.aut.modes)
            self.library.terms = NumericTerms(
                self.model, self.psyms, {k: self.forms.mode_exprs(k)[0] for k in ids},
                {k: self.forms.mode_exprs(k)[1] for k in ids},
                {k: self.aut.modes[k].laws for k in ids},
                {k: self.aut.modes[k].constraints for k in ids})
        return self.library.terms

    def compiled(self, mode_id, dep, active=None):
        """The mode's compiled functions: symbolic (from the library, or embedded and compiled
        now) or numeric.

        Parameters
        ----------
        mode_id : int
        dep : tuple of int
            The dependent speeds.
        active : tuple of str or None
            The active constraints (default: the mode's own).

        Returns
        -------
        compiled mode (``embed.modes.CompiledModeProtocol``)
        """
        mode = self.aut.modes[mode_id]
        active = tuple(sorted(mode.constraints if active is None else active))
        key = (mode_id, active, tuple(dep))
        library = self.library
        compiled = library.mode(key)
        if compiled is not None:
            return compiled
        t0 = time.perf_counter()
        # a constraint known only by its compiled terms (a stub, B empty: a geometry prepared
        # elsewhere) has nothing to embed symbolically: its modes come ready-made (a family's
        # embedding) or run on the numeric path
        stub = any(not self.aut.constraints[c].B for c in active)
        if self.embedding == "symbolic" and not stub:
            compiled = library.install(key, make_mode(self.forms.mode_parts(key), key))
        elif self._starting and not stub:
            # the first mode of a background simulator is compiled at set-up, with LLVM
            compiled = library.install(key, make_mode(self.forms.mode_parts(key), key, backend="llvm"))
        else:
            compiled = library.numeric_modes.get(key)
            if compiled is None:
                cset = self.forms.constraint_set(active)
                compiled = library.numeric_modes[key] = NumericMode(
                    self.numeric_terms(), mode, cset, dep, len(self.outputs), key,
                    [self.forms.constraint_terms(c.name) for c in cset.items])
            if self.embedding == "background" and not stub and key not in library.submitted:
                library.submitted[key] = time.perf_counter()
                self.compiler.submit(key, rhs=self.integrator.uses_rhs)
        self.embed_times.append(time.perf_counter() - t0)
        return compiled

    def precompile_modes(self, max_partitions=12):
        """Embed and compile (LLVM) every mode of the automaton for every choice of dependent
        speeds, at set-up: mode switches then cost no compile at all (small automata only)."""
        from itertools import combinations
        n = self.model.n
        for mode_id, mode in list(self.aut.modes.items()):
            active = tuple(sorted(mode.constraints))
            deps = list(combinations(range(n), len(active)))
            if len(deps) > max_partitions:
                continue
            for dep in deps:
                key = (mode_id, active, dep)
                if self.library.mode(key) is not None:
                    continue
                try:
                    self.library.install(key, make_mode(
                        self.forms.mode_parts(key, EXPLICIT_OPS_OFFLINE), key, backend="llvm"))
                except ConstraintRankError:
                    continue          # this choice is singular everywhere

    def poll_background(self):
        """Take the background worker's finished compiles; the active mode moves to the
        symbolic path at once (x and the monitors do not change)."""
        if self.compiler is None:
            return
        library, st = self.library, self.state
        for key, fns, meta in self.compiler.results():
            compiled = library.install(key, make_mode(meta, key, fns))
            t_sub = library.submitted.get(key)
            if t_sub is not None:
                self.background_latency = time.perf_counter() - t_sub
            if st.compiled_mode is not None and st.compiled_mode.key == key:
                st.compiled_mode = compiled
        for kind, key, obj in self.compiler.extras():
            if kind == "entry":
                library.entry.setdefault(key, obj)
            elif key in library.modes:
                library.modes[key].set_rhs(obj)

    # ---------------------------------------------------- the parameter vector
    def param(self, name):
        """A parameter, input or discrete variable by name (its current value)."""
        if name in self.pnames:
            return float(self.pvec[self.pnames.index(name)])
        try:
            return float(self.params[name])
        except KeyError:
            raise ModelDefinitionError(f"no parameter {name!r}") from None

    def set_inputs(self, values: dict):
        """Take the inputs in ``values`` (by name), all or none: a non-finite value, or one
        outside the automaton's allowed values for that input, raises InputError naming it
        and nothing is changed."""
        new, pvec, o = {}, self.state.pvec, self.n_params
        for i, s in enumerate(self.model.inputs):
            name = str(s)
            if name in values:
                try:
                    v = float(values[name])
                except (TypeError, ValueError):
                    raise InputError(f"input {name} = {values[name]!r} is not a number; keeping "
                                     f"{pvec[o + i]!r}") from None
                if not math.isfinite(v):
                    raise InputError(f"input {name} = {v} is not finite; keeping its previous value")
                allowed = self.aut.allowed.get(name)
                if allowed is not None and v not in allowed:
                    raise InputError(f"input {name} = {values[name]!r} is not one of the allowed "
                                     f"values {list(allowed)}; keeping {pvec[o + i]:g}")
                new[o + i] = v
        for k, v in new.items():
            if v != pvec[k]:
                self._rearm = True
            pvec[k] = v
        self._dirty = True

    # ----------------------------------------------------------------- probes
    def constraint_forces(self):
        """Multipliers of the active constraints: F + F* + B^T lambda = 0 (zero where a declared
        force symbol carries the constraint force, see ``forces_now``)."""
        st = self.state
        if st.compiled_mode is None:
            return {}
        return dict(zip(st.active, st.mon[st.compiled_mode.sl_lambda].tolist()))

    def forces_now(self):
        """Declared force symbols' values now (by name)."""
        st = self.state
        if st.compiled_mode is None:
            return {}
        return dict(zip(map(str, self.model.forces), st.mon[st.compiled_mode.sl_forces].tolist()))

    def outputs_now(self):
        """The outputs now (by name)."""
        st = self.state
        if st.compiled_mode is None:
            return {}
        return dict(zip(self.outputs, st.mon[st.compiled_mode.sl_outputs].tolist()))

    def residual(self):
        """Largest residual of the active constraints (|B u + C| and |Phi|) at the current state."""
        st = self.state
        return 0.0 if st.compiled_mode is None else float(st.mon[st.compiled_mode.i_res])

    def forces_at(self, mode_id, discrete, t, q, u):
        """Contact forces in mode ``mode_id`` at (t, q, u) with the given discrete values.

        Returns
        -------
        dict
            Force name -> value.
        """
        st = self.state
        saved = st.discrete
        st.discrete = dict(discrete)
        self._sync_discrete()
        try:
            active = tuple(sorted(self.aut.modes[mode_id].constraints))
            dep = self.forms.partition(active, t, q, self.pvec)
            compiled = self.compiled(mode_id, dep, active)
            mon = compiled.monitors(t, np.concatenate((q, u[list(compiled.ind)])), self.pvec)
        finally:
            st.discrete = saved
            self._sync_discrete()
        return dict(zip(map(str, self.model.forces), mon[compiled.sl_forces].tolist()))
