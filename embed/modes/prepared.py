"""The compiled-terms programs a simulator prepares ahead (gillespie2005 Sec 5.5): one compiled
call a step for a mode with any partition of the speeds, so that entering a mode or re-selecting
the independent speeds (Sec 5.4) needs no embedding or compile in the step; and entering a
constraint set in one call (mueller eq 7, ``TermsProgramMode.enter``)."""

from __future__ import annotations

from ..base.errors import CompilationError
from ..model.constraints import moving_B
from ..codegen.native import OPT_RUN
from .numeric import EntryTerms
from .terms_mode import make_terms_mode


class PreparedPrograms:
    """The compiled-terms programs of one simulator's modes, kept in its mode library
    (``library.terms_programs``); the base of ``embed.modes.mode_compiler.ModeCompiler``,
    whose ``forms``, ``library``, ``embedding``, ``formulation`` and ``uses_rhs`` it reads."""

    def enter(self, mode_id, active, t, q, u, pvec, allow):
        """Entering the constraints ``active`` of mode ``mode_id`` in one compiled call where
        its compiled-terms program is prepared (``TermsProgramMode.enter``: (dep, x,
        monitors, impulses)), else None; ``monitors`` are the program's, for the mode
        ``compiled`` then gives only if it is that program (``runs_on``)."""
        if self.formulation.full_state:
            return None
        base = self.library.terms_programs.get((mode_id, active))
        return None if base is None else base.enter(t, q, u, pvec, allow)

    def runs_on(self, compiled, active):
        """Whether ``compiled`` runs on the prepared compiled-terms program of ``active``."""
        base = self.library.terms_programs.get((compiled.key[0], active))
        return base is not None and getattr(compiled, "_step", None) is base._step

    # ------------------------------------------------------- the programs
    def terms_mode(self, mode_id, active, dep, build=False, opt=None):
        """The mode's compiled-terms program for the partition ``dep`` (``TermsProgramMode``:
        one compiled call a step, any partition, ``embed.modes.terms_program``), or None: not
        prepared (``build``: compile it now, at codegen level ``opt``, ``embed.codegen.native``), or
        the mode has none (forces, laws, more
        than 3 constraints; the adaptive solver, which needs the right-hand side alone)."""
        if self.uses_rhs:
            return None
        lib, pkey = self.library, (mode_id, tuple(active))
        if pkey not in lib.terms_programs:
            if not build:
                return None
            try:
                lib.terms_programs[pkey] = make_terms_mode(self.forms, mode_id, pkey[1], dep, opt)
            except CompilationError:
                lib.terms_programs[pkey] = None
            else:         # every partition's mode made now: none in an event step
                lib.terms_programs[pkey].partitions()
                for key in [k for k in lib.numeric_modes if k[:2] == pkey]:
                    del lib.numeric_modes[key]      # the numpy path's, entered before: the
                                                    # program runs the set from now on
        base = lib.terms_programs[pkey]
        return None if base is None else base.with_dep(dep)

    def _wants_program(self, active):
        """Whether a mode with the constraints ``active`` gets a compiled-terms program ahead:
        on the numeric and background paths, on the symbolic path if B moves (``moving_B``:
        its partition may need re-selecting); never
        for stubs (constraints known by their compiled terms only, B unknown)."""
        cons = [self.forms.automaton.constraints[c] for c in active]
        if any(not c.B for c in cons):
            return False
        return self.embedding != "symbolic" or moving_B(self.forms.model, cons)

    def prepare(self, mode_id=None, active=None):
        """Compile ahead the compiled-terms programs that the stepping loop may need (any
        partition, ``terms_mode``): of the mode ``mode_id`` with the constraints ``active``,
        or (default) every mode's own, where ``_wants_program``: a mode entered or a partition
        re-selected (Sec 5.4) then runs on it, with no embedding or compile in the step."""
        todo = ([(mode_id, tuple(sorted(active)))] if mode_id is not None else
                [(mid, tuple(sorted(md.constraints)))
                 for mid, md in list(self.forms.automaton.modes.items())])
        for mid, act in todo:
            if self._wants_program(act):
                mode = self.terms_mode(mid, act, tuple(range(len(act))), build=True,
                                       opt=OPT_RUN)    # set-up: the faster code, whatever it takes
                if mode is None:             # the general path's jump into it (mueller eq 7)
                    if act not in self.library.entry:
                        self.library.entry[act] = EntryTerms(
                            self.forms.model, self.forms.constraint_set(act), self.forms.psyms,
                            "llvm")
                    continue
                # its machine code paged in (a call of its entry and of its step at a dummy
                # state) by ``embed.hybrid.warmup.warm_up`` where the calls are paid ahead (a
                # real-time run): an offline start places no mode it does not step (issue 30)
