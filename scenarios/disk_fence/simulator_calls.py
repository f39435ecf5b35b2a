"""What the run-time fence asks of a ``Simulator``, each in one adapter function.

The fence installs modes and terms it forms itself (the fence of any profile, given a
profile's jet) and sets the discrete variables that select a fence, through the public calls
of ``Simulator`` and ``ModeLibrary``; each adapter below is one such call (they can be inlined).
Only ``install_mode_stub`` still reaches into the automaton.
"""

from __future__ import annotations



def set_discrete(simulator, values):
    """Set discrete variables (``{name: value}``) and bring the simulator's parameter vector in
    line with them.  Stands for ``Simulator.set_discrete(**values)``.

    Parameters
    ----------
    simulator : embed.simulator.Simulator
    values : dict of str to float
    """
    simulator.set_discrete(values)


def active_mode(simulator):
    """The automaton's ``Mode`` the simulator is in, or None before it starts.  Stands for
    ``Simulator.active_mode`` (a property)."""
    return simulator.active_mode


def shared(simulator, name, build):
    """The object ``name`` shared by every simulator of a scenario (and the worker), built by
    ``build()`` the first time.  Stands for ``ModeLibrary.shared(name, build)``.

    Parameters
    ----------
    simulator : embed.simulator.Simulator
    name : str
        the key, e.g. ``"profile_family"``.
    build : callable
        no arguments; returns the object.

    Returns
    -------
    the shared object.
    """
    return simulator.library.shared(name, build)


def has_constraint_terms(simulator, constraint_name):
    """Whether the numeric terms of constraint ``constraint_name`` are installed (in the
    caches the simulators of a scenario share).  Stands for
    ``ModeLibrary.has_constraint_terms(name)``."""
    return simulator.library.has_constraint_terms(constraint_name)


def install_constraint_terms(simulator, constraint_name, terms):
    """Install the numeric terms (``embed.numeric.ConstraintTerms``) of a constraint defined
    at run time.  Stands for ``ModeLibrary.install_constraint_terms(name, terms)``."""
    simulator.library.install_constraint_terms(constraint_name, terms)


def install_entry_terms(simulator, active, entry):
    """Install the entry terms (``embed.numeric.EntryTerms``) of the constraint set
    ``active`` (sorted constraint names).  Stands for ``ModeLibrary.install_entry_terms``."""
    simulator.library.install_entry_terms(active, entry)


def install_compiled_mode(simulator, key, compiled):
    """Install a compiled mode (rhs, monitors, rk4) under ``key`` = (mode id, active
    constraints, dependent speeds).  Stands for ``ModeLibrary.install(key, compiled)``."""
    simulator.library.install(key, compiled)


def install_mode_stub(simulator, mode, constraint_stubs):
    """Make ``mode`` and its constraints (stubs known by their compiled terms only) known to
    this simulator's automaton, leaving those it knows already.  Stands for
    ``Simulator.add_mode(mode, stubs=...)`` accepting stubs."""
    for constraint in constraint_stubs:
        simulator.automaton.constraints.setdefault(constraint.name, constraint)
    simulator.automaton.modes.setdefault(mode.id, mode)


def set_parameter_vector(simulator, values):
    """Set the parameter vector (in ``simulator.pnames`` order) in place.  Stands for
    ``Simulator.set_parameters(values)``."""
    simulator.set_parameters(values)


def partition(simulator, active, t, q):
    """The dependent speeds the simulator would choose for constraint set ``active`` at
    configuration ``q``, time ``t`` (gillespie2005 eq 11).  Stands for
    ``Simulator.partition(active, t, q)``."""
    return simulator.partition(active, t, q)


def expect_mode(simulator, key):
    """Tell the simulator that mode ``key`` has been asked of the background worker by someone
    else (the fast worker relayed it), so that it takes the answer and does not ask again.
    Stands for ``Simulator.expect_background_mode(key)``."""
    simulator.expect_background_mode(key)
