"""The mode library: what a scenario's simulators compiled, shared (MuJoCo's MjModel to MjData).

Typed caches of the compiled model, apart from any run's state (``embed.state``):

- ``modes``: compiled modes of the symbolic path by (mode id, active constraints, dep)
  (``CompiledMode``, ``LinearMode``, a scenario's own such as disk_fence's ``JetMode``);
- ``numeric_modes``: the same keys on the compiled-terms path (``NumericMode``);
- ``embeddings``: symbolic embeddings (gillespie2005 eq 11-12) by (constraint set, dep);
- ``constraint_terms``: each constraint's own compiled terms by name (Sec 5.5);
- ``entry``: entry terms of a constraint set (mueller eq 7, ``EntryTerms``) by the set;
- ``expressions``: outputs and switching conditions converted to the model's symbols;
- ``submitted``: background compiles asked for (key -> time asked);
- ``terms``: the unconstrained terms compiled once (``NumericTerms``), or None.

A library is kept in a plain dict (a ``Scenario``'s cache for one embedding path, which the
scenario owns): its entries are those dicts, so code that still indexes the store by the old
names ("mode", "numeric", "emb", "cterms", "entry", "exprs", "submitted", "terms") and a
library over the same store see the same objects.  Keys other than those (a scenario's own
caches, e.g. "profile_family") pass through to the store.  See docs/design.md, "Data flow":
the compiled numeric step is cached per constraint set and partition.
"""

from __future__ import annotations

_NAMES = {"modes": "mode", "numeric_modes": "numeric", "embeddings": "emb",
          "constraint_terms": "cterms", "entry": "entry", "expressions": "exprs",
          "submitted": "submitted"}
_SELF = "library"     # the store's entry that holds its library


class ModeLibrary:
    """Typed caches of compiled modes and terms, shared by the simulators of one scenario.

    Parameters
    ----------
    store : dict, ModeLibrary or None
        The dict the caches live in (created if None); a library is taken as it is.
    """

    __slots__ = ("store", "modes", "numeric_modes", "embeddings", "constraint_terms", "entry",
                 "expressions", "submitted")

    def __new__(cls, store=None):
        if isinstance(store, ModeLibrary):
            return store
        if store is not None and isinstance(store.get(_SELF), ModeLibrary):
            return store[_SELF]          # one library per store: its simulators share it
        return super().__new__(cls)

    def __init__(self, store=None):
        if store is self or (store is not None and store.get(_SELF) is self):
            return
        self.store = store if store is not None else {}
        self.store[_SELF] = self
        for attr, key in _NAMES.items():
            setattr(self, attr, self.store.setdefault(key, {}))

    # -------------------------------------------------------------- typed access
    @property
    def terms(self):
        """The unconstrained terms (``NumericTerms``), None until compiled."""
        return self.store.get("terms")

    @terms.setter
    def terms(self, value):
        self.store["terms"] = value

    def mode(self, key):
        """The compiled mode of the symbolic path for key = (mode id, active, dep), or None.

        Parameters
        ----------
        key : tuple
            (mode id, sorted active constraint names, dependent speed indices).

        Returns
        -------
        compiled mode or None
        """
        return self.modes.get(key)

    def install(self, key, compiled):
        """Keep ``compiled`` as the symbolic path's mode for ``key``; returns it."""
        self.modes[key] = compiled
        return compiled

    def entry_terms(self, active):
        """The entry terms compiled for the constraint set ``active`` (a tuple of names), or None."""
        return self.entry.get(active)

    def install_entry_terms(self, active, entry):
        """Keep the entry terms ``entry`` of the constraint set ``active``; returns them."""
        self.entry[active] = entry
        return entry

    def has_constraint_terms(self, name):
        """Whether the compiled terms of constraint ``name`` are kept."""
        return name in self.constraint_terms

    def install_constraint_terms(self, name, terms):
        """Keep the compiled terms (``ConstraintTerms``) of a constraint defined at run time."""
        self.constraint_terms[name] = terms
        return terms

    def shared(self, name, build):
        """A scenario's own object ``name`` (a family of fences, say), built by ``build()`` the
        first time and shared by every simulator of the scenario from then on."""
        if name not in self.store:
            self.store[name] = build()
        return self.store[name]

    def embedding(self, key, build):
        """The symbolic embedding for key = (constraint set key, dep), built by ``build()`` once."""
        emb = self.embeddings.get(key)
        if emb is None:
            emb = self.embeddings[key] = build()
        return emb

    # ------------------------------------------- the store's names (older callers)
    def __getitem__(self, key):
        return self.store[key]

    def __setitem__(self, key, value):
        self.store[key] = value
        attr = next((a for a, k in _NAMES.items() if k == key), None)
        if attr is not None:        # a cache replaced whole: the typed view follows
            setattr(self, attr, value)

    def __contains__(self, key):
        return key in self.store

    def get(self, key, default=None):
        return self.store.get(key, default)

    def setdefault(self, key, default=None):
        return self.store.setdefault(key, default)
