"""The momentum-consistent velocity jump when constraints become active (mueller eq 5-7).

Solves [M B^T; B 0] [du; Lambda] = [0; -(B u + C)] over all constraints active after the
event, persistent ones included: the form of eq 7 that needs no inverse of M, so it also
holds when the unconstrained M is singular (Euler parameter speeds).  With the persistent
constraints satisfied before the event this is eq 7 itself; for a new contact it is ANDY's
plastic impact map (wang2019 eq 19).  See docs/design.md, "Where each paper fits".
"""

from __future__ import annotations

import math

import numpy as np

from ..base.errors import ConstraintRankError
from ..base.tolerances import ACTIVATION_TOL
from .projection import max_abs

try:        # numpy.linalg.solve's own gufunc for one right-hand side (numpy 1.24 to 2.x)
    from numpy.linalg._umath_linalg import solve1 as _SOLVE1
except ImportError:             # pragma: no cover - a numpy without it
    _SOLVE1 = None


def _singular(err, flag):
    raise np.linalg.LinAlgError("Singular matrix")


def solve(A, b):
    """``np.linalg.solve(A, b)`` for a float64 matrix and vector: its gufunc (LAPACK dgesv)
    without its Python checks and conversions, which cost several times the solve in an
    event step that finds the caches cold (docs/design.md, facts).  The same call: the same
    bits.  Raises np.linalg.LinAlgError where A is singular (after numpy's RuntimeWarning
    "invalid value encountered in solve1", under numpy's default error state)."""
    if _SOLVE1 is None:
        return np.linalg.solve(A, b)
    # first without the error state: entering and leaving it is 60-70 us of 150 where an
    # event step finds the caches cold (issue 30, tails); a result that is not finite (A
    # singular, which may also have warned, or raised under a caller's error state) is
    # solved again under it, which raises as numpy.linalg.solve does
    try:
        z = _SOLVE1(A, b, signature="dd->d")
        if all(map(math.isfinite, z.tolist())):
            return z
    except (FloatingPointError, RuntimeWarning):
        pass
    with np.errstate(call=_singular, invalid="call", over="ignore", divide="ignore",
                     under="ignore"):
        return _SOLVE1(A, b, signature="dd->d")


def activation_jump(K, rhs, u, names, t, tol=ACTIVATION_TOL):
    """The speeds just after constraints ``names`` become active, and their impulses.

    Parameters
    ----------
    K : ndarray
        [M B^T; B 0] at the event (``EntryTerms``), symmetric.
    rhs : ndarray
        [0; -(B u + C)].
    u : ndarray
        The full speeds before the event.
    names : tuple of str
        The constraints active after the event (the rows of B).
    t : float
        The event time (s), for the error.
    tol : float
        No jump when |B u + C| <= tol max(1, |u|).

    Returns
    -------
    (ndarray, dict)
        The new full speeds (``u`` itself when there is no jump) and the impulse of each
        constraint by name.

    Raises
    ------
    ConstraintRankError
        K is singular (redundant constraints).
    """
    if max_abs(rhs) <= tol * max(1.0, max_abs(u)):
        return u, {}
    n = len(u)
    try:        # LAPACK dgesv (numpy's: bit for bit scipy's, without importing scipy)
        z = solve(K.T, rhs)     # K.T: the matrix dgesv was given
    except np.linalg.LinAlgError:
        raise ConstraintRankError(
            f"constraints {list(names)} cannot be activated at t = {t:.9g} s: "
            "[M B^T; B 0] is singular (redundant constraints)") from None
    return u + z[:n], dict(zip(names, (-z[n:]).tolist()))
