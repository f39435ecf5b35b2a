"""The partition of the speeds (gillespie2005 eq 11): which speeds are dependent, chosen by
numeric pivoting on B at the current state, and the condition of the dependent block
(``kappa``).  ``embed.embedding.embedding`` embeds with the partition chosen here."""

from __future__ import annotations

import contextlib
import math

import numpy as np

from ..base.errors import ConstraintRankError
from ..base.flapack import routine
from ..base.tolerances import PIVOT_RANK_TOL


def _pivoted_qr(a):
    """|diag R| and the 0-based column pivots of A P = Q R: LAPACK dgeqp3 called directly
    (an event step calls this; scipy.linalg.qr's checks and workspace query cost many times
    the factorization: docs/design.md, facts).  scipy's LAPACK extension is loaded here, when
    first needed (more than ``SMALL_M`` constraints, or a rank check), alone: not the scipy
    package (``embed.base.flapack``: the same routine, issue 30).  A matrix whose bytes are
    one dgeqp3 factorized at build time (``shipped``) takes that answer: the routine is a
    pure function of its input's bits on one CPU and library, so it is the same one."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    key = (a.shape, a.tobytes())
    got = _SHIPPED.get(key)
    if got is not None:
        return np.array(got[0]), np.array(got[1])
    qr, jpvt, _, _, info = routine("dgeqp3")(a)
    if info != 0:
        raise ConstraintRankError(f"pivoted QR failed (LAPACK info {info})")
    diag, piv = np.abs(qr.diagonal()), jpvt - 1
    for table in _RECORDING:
        if len(table) < RECORD_MAX:
            table[key] = (diag.tolist(), piv.tolist())
    return diag, piv


# dgeqp3's answers formed at build time for the matrices an FMU's default run factorized
# (its start: the consistent start and warm-up; its events), shipped with its object code,
# whose key (package versions, CPU name and features) is theirs: (shape, bytes) -> (|diag R|,
# pivots).  Loading scipy's LAPACK costs 10 ms of a start (issue 30); a matrix not among
# them (other parameters, other inputs) loads it as before.
_SHIPPED = {}
_RECORDING = []
RECORD_MAX = 512      # matrices kept by one ``recording`` (a long default run: the first)


@contextlib.contextmanager
def recording():
    """Yields the table {(shape, bytes): (|diag R|, pivots)} of every dgeqp3 factorization
    made inside (by any thread), at most ``RECORD_MAX``: ``fmu_src.runtime.formed.form``."""
    table = {}
    _RECORDING.append(table)
    try:
        yield table
    finally:
        _RECORDING.remove(table)


def shipped(table: dict) -> None:
    """Take dgeqp3's answers formed at build time (``recording``) for the same CPU and
    libraries (their file's key said so)."""
    _SHIPPED.update(table)


SMALL_M = 3           # up to this many constraints the pivoting runs in plain floats
TIE = 1e-9            # squared column norms this close (relative) to the largest tie with it


def _dot(a, b):
    """sum a_i b_i from 0.0, left to right: the operations of ``Program.dot``, so that the
    compiled partition (``terms_program.entry_program``) chooses bit for bit as this one."""
    acc = 0.0
    for x, y in zip(a, b):
        acc += x * y
    return acc


def _pivoted_gram_schmidt(a, m):
    """|diag R| (first m) and pivots of A P = Q R by modified Gram-Schmidt with column
    pivoting, for a few rows in plain floats: the largest remaining column norm, the first
    of those within ``TIE`` of it (so that ties decided by roundoff, the equal norms of a
    chain's links, always go to the same column): dgeqp3's choice but on such ties."""
    cols = a.T.tolist()
    free = list(range(len(cols)))
    diag, piv = [], []
    steps = min(m, len(cols))
    for step in range(steps):
        norms = [_dot(cols[j], cols[j]) for j in free]
        top = max(norms) * (1.0 - TIE)
        k = next(i for i, v in enumerate(norms) if v >= top)
        d = math.sqrt(norms[k])
        j = free.pop(k)
        diag.append(d)
        piv.append(j)
        if d == 0.0 or step == steps - 1:   # the last pivot: nothing reads the columns left
            break
        e = [v / d for v in cols[j]]
        for k in free:
            c = cols[k]
            p = _dot(e, c)
            cols[k] = [x - p * y for x, y in zip(c, e)]
    return diag, piv


def partition(B_num: np.ndarray, names=()) -> tuple:
    """Dependent speed indices for a numeric B (m x n), by QR with column pivoting (eq 11).

    Later speeds are preferred as dependent when columns tie, so that the paper's
    choice (u1 independent, u2 dependent for the rolling disk) comes out.
    Raises ConstraintRankError naming the constraints that are redundant.
    """
    m, n = B_num.shape
    if m == 0:
        return ()
    if not all(map(math.isfinite, B_num.flat)):
        raise ConstraintRankError(f"constraint Jacobian B of {list(names)} is not finite at this state")
    if m <= SMALL_M:
        diag, piv = _pivoted_gram_schmidt(B_num[:, ::-1], m)
    else:
        diag, piv = _pivoted_qr(B_num[:, ::-1])
    scale = max(diag[0], 1.0) if len(diag) else 1.0
    if m > n or len(diag) < m or diag[m - 1] <= PIVOT_RANK_TOL * scale:
        dr, prow = _pivoted_qr(B_num.T)
        rank = int(np.sum(dr > PIVOT_RANK_TOL * max(dr[0], 1.0)))
        bad = [names[i] for i in prow[rank:]] if names else list(prow[rank:])
        raise ConstraintRankError(
            f"active constraints {list(names)} are redundant or inconsistent at this state "
            f"(rank {rank} < {m}); constraints {bad} depend on the others: remove them")
    return tuple(sorted(n - 1 - int(j) for j in piv[:m]))


def kappa(B_num: np.ndarray, dep, B1inv=None) -> float:
    """kappa(B1) = ||B||_1 ||B1^-1||_1: how large D = -B1^-1 B_ind can grow, the condition
    of the dependent block (gillespie2005 Sec 5.4, haug_pavesic2023 Sec 3.1)."""
    m = len(dep)
    if m == 0:
        return 1.0
    nB = np.abs(B_num).sum(axis=0).max()
    if B1inv is None:
        try:        # LAPACK dgesv (numpy's: bit for bit scipy's, without importing scipy)
            B1inv = np.linalg.solve(B_num[:, list(dep)], np.eye(m))
        except np.linalg.LinAlgError:
            return float("inf")
    return float(nB * np.abs(B1inv).sum(axis=0).max())
