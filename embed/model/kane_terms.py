"""Kane's terms formed once and shipped, bit for bit (issue 30).

``Model`` derives F_r and F_r* (gillespie2005 eq 1-4) with sympy's ``KanesMethod`` (seconds
to tens of seconds for a long chain) and converts them to symengine.  ``recording()``
collects, for every model a ``build()`` forms, its terms in the model's plain symbols as
*sympy* expressions; ``shipped(terms)`` hands them back to the models a later ``build()``
forms (the FMU's background worker, a refused object file), which then skip ``KanesMethod``
and convert them exactly as a fresh build does.

Why sympy and not the converted symengine expressions: symengine's pickle rebuilds an Add's
or Mul's terms by inserting them into a hash map in the order it iterates them, and that map
iterates in an order that depends on its insertion history (libstdc++'s ``unordered_map``
links new nodes at the front, and a rehash links them again), so a loaded expression lists
its terms in another order than the one built fresh (and a second load in yet another one).
LLVM code sums terms in that order: modes compiled from loaded symengine expressions
differed from a fresh build's in the last bit (pendulum_belt, 6e-11 by 8 s).  A sympy
expression keeps its arguments in a tuple in canonical order, so the symengine expression
converted from a loaded one is the fresh one, term for term.

Models are matched by name and by the order in which ``build()`` forms them; the caller
checks that the terms were formed from the same sources and options (``embed.base.shipped``).
"""

from __future__ import annotations

import contextlib
import threading

_STATE = threading.local()


@contextlib.contextmanager
def recording():
    """Collect the terms of the models formed inside: yields {(name, k): terms}, k counting
    models of one name in the order they are formed."""
    out = {}
    _STATE.record, _STATE.record_seen = out, {}
    try:
        yield out
    finally:
        _STATE.record = _STATE.record_seen = None


@contextlib.contextmanager
def shipped(terms):
    """Models formed inside take their terms from ``terms`` (``recording``'s dict) instead of
    deriving them; a model not in it derives its own."""
    _STATE.shipped, _STATE.seen = dict(terms or {}), {}
    try:
        yield
    finally:
        _STATE.shipped = _STATE.seen = None


def _key(name, seen):
    k = seen.get(name, 0)
    seen[name] = k + 1
    return (name, k)


def take(name):
    """The shipped terms of the next model named ``name`` formed, or None."""
    terms = getattr(_STATE, "shipped", None)
    if terms is None:
        return None
    return terms.get(_key(name, _STATE.seen))


def record(name, terms):
    """Keep the terms of a model just formed, if recording."""
    out = getattr(_STATE, "record", None)
    if out is not None:
        out[_key(name, _STATE.record_seen)] = terms
