"""The checks of a fence profile from outside (``validate``) and the time limit they run under
in the background worker: finite, tangent to the ramp at P, smooth, curvature within bounds.
Conventions: ``scenarios/disk_fence/profile.py``.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading

import numpy as np

from embed.base.record import Record

from .profile import (GEOMETRY_BAD_PARAMETER, GEOMETRY_CURVATURE, GEOMETRY_NOT_FINITE,
                      GEOMETRY_NOT_SMOOTH, GEOMETRY_NOT_TANGENT, GEOMETRY_TIMEOUT,
                      FenceProfile, GeometryError, fail, hermite, positive_finite)

CONTINUITY_TOL = 1e-9       # |h(0)| (length units) and |h'(0)| at P
MAX_CURVATURE = 1e3         # default |kappa| limit (1/length): radius of curvature >= 1 mm in metres
N_GRID = 4000               # intervals of the check grid on [0, L_f]
CHECK_TIME_LIMIT = None     # s; set in the background worker's process (``jobs.set_up_worker``),
#                             where a timer signal may be used (never in a master's process)


@contextlib.contextmanager
def time_limit():
    """Raise GeometryError(GEOMETRY_TIMEOUT) in the block once CHECK_TIME_LIMIT has passed
    (a timer signal, acting between two Python operations); a no-op unless the limit is set,
    in the main thread of a Unix process (the background worker)."""
    limit = CHECK_TIME_LIMIT
    if (limit is None or not hasattr(signal, "setitimer")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return

    def expired(signum, frame):
        raise GeometryError(f"the checks took longer than {limit} s", code=GEOMETRY_TIMEOUT,
                            check="time", value=limit)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class FenceReport(Record):
    """What ``validate`` measured on the grid: sigma extent, arc length of the fence,
    largest |kappa|, largest kappa (towards the disk), largest |h| (floats; a frozen
    ``embed.base.record.Record``: no ``dataclasses`` in the FMU's start, issue 30)."""

    FIELDS = ("length", "path_length", "max_abs_curvature", "max_curvature", "max_abs_height")
    FROZEN = True

    def __init__(self, length, path_length, max_abs_curvature, max_curvature, max_abs_height):
        self.__dict__.update(length=length, path_length=path_length,
                             max_abs_curvature=max_abs_curvature, max_curvature=max_curvature,
                             max_abs_height=max_abs_height)


def validate(profile: FenceProfile, L_f, *, disk_radius=None, max_curvature=MAX_CURVATURE,
             n_grid=N_GRID) -> FenceReport:
    """Check a fence profile on sigma in [0, L_f]; raise GeometryError naming the failed check.

    Grid: n_grid + 1 uniform points on [0, L_f], spacing ds.
    1. L_f finite and > 0; an arc needs L_f < R (code 7).
    2. h, h', h'' finite and real at every grid point (code 3).
    3. No singular point between grid points (code 3): every subexpression whose zeros make h,
       h' or h'' singular (denominators, log arguments, cos of tan arguments, 1 - u^2 of
       asin/acos, bases of fractional powers p < 2) must keep one sign, its cubic Hermite
       interpolant (from values and slopes) staying away from 0 by 1e-12 of its largest value
       on every interval; bases of fractional powers p > 2 must not become negative.  A zero
       the interpolant cannot see (a touching zero of order > 3 narrower than ds) can escape.
    4. Continuity and tangency with the ramp at P: |h(0)| <= 1e-9 and |h'(0+)| <= 1e-9 (code 4).
    5. No kink (code 5).  With 2-3, h' can only jump where the argument u of an abs changes
       sign; every such zero (a grid point where u = 0, a sign change of u, or both roots of a
       dip of its Hermite interpolant through 0 inside one interval) is located on the cubic
       Hermite interpolant, and the one-sided slopes h'(a-), h'(a+) (every abs on its branch:
       A_k = -+sign(u_k') at its zero) must agree within 1e-9 (1 + |h'(a-)| + |h'(a+)|).
       Exact for any kink angle; a jump of curvature is allowed (the arc meets the ramp with
       one at P).
    6. Curvature kappa = h''/(1+h'^2)^(3/2) at the grid points (code 6): |kappa| <= max_curvature
       (default 1e3 per length unit: radius of curvature >= 1 mm in metres), and if disk_radius
       r is given, kappa r < 1 where the fence bends towards the disk (a disk of radius r
       follows a concave fence only where its radius of curvature exceeds r: the arc needs
       R > r).
    An arc (``FenceProfile.arc``) is checked in closed form (kappa = 1/R, no grid).
    Returns a FenceReport.
    """
    with np.errstate(all="ignore"):
        return _validate(profile, L_f, disk_radius, max_curvature, n_grid)


def _validate(profile, L_f, disk_radius, max_curvature, n_grid):
    L = positive_finite(L_f, "fence length L_f", "length")
    if profile.kind == "arc" and L >= profile.radius:
        fail(GEOMETRY_BAD_PARAMETER, "length", L,
              f"fence length along the ramp L_f = {L:g} must be below the arc radius R = "
              f"{profile.radius:g} (the arc turns through a quarter turn at sigma = R)")
    if disk_radius is not None:
        positive_finite(disk_radius, "disk radius r", "disk_radius")
    mc = positive_finite(max_curvature, "curvature limit", "max_curvature")
    if profile.kind == "arc" and profile.radius is not None:
        return _validate_arc(profile, L, disk_radius, mc)
    n_grid = int(n_grid)
    sig = np.linspace(0.0, L, n_grid + 1)
    ds = sig[1] - sig[0]
    num = profile.numeric()
    vals = num.grid(sig)
    h, h1, h2 = vals[:, 0], vals[:, 1], vals[:, 2]
    where = f"{profile.describe()} on [0, {L:g}]"
    for name, v in (("h", h), ("h'", h1), ("h''", h2)):
        bad = ~np.isfinite(v)
        if bad.any():
            i = int(np.argmax(bad))
            fail(GEOMETRY_NOT_FINITE, "finite", float(sig[i]),
                  f"{where}: {name}(s) is not finite or not real at s = {sig[i]:.6g} "
                  f"({name} = {v[i]})")
    for k, (u, need, why) in enumerate(num.critical):
        uu, du = vals[:, 3 + 2 * k], vals[:, 4 + 2 * k]
        _, (lo, _), (hi, _) = hermite(uu, du, ds)
        size = np.max(np.abs(uu))
        if need == "nonzero":
            bad = (lo <= 1e-12 * size) & (hi >= -1e-12 * size)
        else:
            bad = lo < -1e-12 * size
        bad |= ~(np.isfinite(lo) & np.isfinite(hi))
        if bad.any():
            i = int(np.argmax(bad))
            what = "vanishes" if need == "nonzero" else "becomes negative"
            fail(GEOMETRY_NOT_FINITE, "singular", float(sig[i]),
                  f"{where}: the {why} {what} between s = {sig[i]:.6g} and {sig[i + 1]:.6g}, "
                  f"where h, h' or h'' is then not finite or not real")
    if abs(h[0]) > CONTINUITY_TOL:
        fail(GEOMETRY_NOT_TANGENT, "continuity", float(h[0]),
              f"{where}: h(0) = {h[0]:.6g}; the fence must start on the ramp at P, "
              f"|h(0)| <= {CONTINUITY_TOL:g}")
    slope0 = h1[0]
    if num.abs_args:                               # h'(0+): every abs on its branch just past 0
        AR, _ = _branch_signs(num, vals[:1], +1.0)
        slope0 = num.slope(np.column_stack([[0.0], AR]))[0]
    if not abs(slope0) <= CONTINUITY_TOL:
        fail(GEOMETRY_NOT_TANGENT, "tangency", float(slope0),
              f"{where}: h'(0) = {slope0:.6g}; the fence must start tangent to the ramp at P "
              f"(it has a kink there), |h'(0)| <= {CONTINUITY_TOL:g}")
    _check_kinks(num, vals, sig, ds, where)
    kappa = h2 / (1.0 + h1 ** 2) ** 1.5
    i = int(np.argmax(np.abs(kappa)))
    if abs(kappa[i]) > mc:
        fail(GEOMETRY_CURVATURE, "curvature", float(kappa[i]),
              f"{where}: curvature {kappa[i]:.6g} at s = {sig[i]:.6g} exceeds the limit {mc:g} "
              f"(radius of curvature below {1 / mc:g})")
    if disk_radius is not None:
        r = float(disk_radius)
        j = int(np.argmax(kappa))
        if kappa[j] * r >= 1.0:
            fail(GEOMETRY_CURVATURE, "curvature", float(kappa[j]),
                  f"{where}: curvature {kappa[j]:.6g} at s = {sig[j]:.6g} bends the fence towards "
                  f"the disk with radius {1 / kappa[j]:.6g} <= disk radius {r:g}; the disk cannot "
                  f"follow it (the arc needs R > r)")
    w = np.sqrt(1.0 + h1 ** 2)
    return FenceReport(L, float(0.5 * ds * np.sum(w[1:] + w[:-1])), float(np.max(np.abs(kappa))),
                       float(np.max(kappa)), float(np.max(np.abs(h))))


def _validate_arc(profile, L, disk_radius, mc):
    """The arc in closed form (same checks, same messages): kappa = 1/R everywhere."""
    R = profile.radius
    where = f"{profile.describe()} on [0, {L:g}]"
    if 1.0 / R > mc:
        fail(GEOMETRY_CURVATURE, "curvature", 1.0 / R,
              f"{where}: curvature {1 / R:.6g} at s = 0 exceeds the limit {mc:g} "
              f"(radius of curvature below {1 / mc:g})")
    if disk_radius is not None and float(disk_radius) / R >= 1.0:
        fail(GEOMETRY_CURVATURE, "curvature", 1.0 / R,
              f"{where}: curvature {1 / R:.6g} at s = 0 bends the fence towards the disk with "
              f"radius {R:.6g} <= disk radius {float(disk_radius):g}; the disk cannot follow it "
              f"(the arc needs R > r)")
    return FenceReport(L, R * math.asin(L / R), 1.0 / R, 1.0 / R,
                       L * L / (R + math.sqrt((R - L) * (R + L))))


MAX_KINK_CANDIDATES = 20000


def _branch_signs(num, g, side):
    """Signs A_j of every abs argument at points g (rows of ``num.grid``) on one side (-1 left,
    +1 right): sign(u_j), or where u_j is at a zero, side * sign(u_j') (its sign just past it)."""
    off = num._n
    u, du = g[:, off::2], g[:, off + 1::2]
    size = np.max(np.abs(u), axis=0, initial=0.0) + 1e-300
    at_zero = np.abs(u) <= 1e-12 * size
    return np.where(at_zero, side * np.sign(du), np.sign(u)), at_zero


def _check_kinks(num, vals, sig, ds, where):
    """Step 5 of ``validate``: one-sided slopes at every zero of an abs argument inside (0, L_f]."""
    m = len(num.abs_args)
    if not m:
        return
    xs, ks = [], []
    for k in range(m):
        u, du = num.abs_columns(vals, k)
        (a, b, c, u0), (lo, tlo), (hi, thi) = hermite(u, du, ds)
        p = lambda i, t: ((a[i] * t + b[i]) * t + c[i]) * t + u0[i]   # noqa: E731

        def roots(i, t0, t1):                       # bisection on the cubic, sign change on [t0, t1]
            s0 = np.sign(p(i, t0))
            for _ in range(60):
                tm = 0.5 * (t0 + t1)
                left = np.sign(p(i, tm)) == s0
                t0, t1 = np.where(left, tm, t0), np.where(left, t1, tm)
            return sig[i] + ds * 0.5 * (t0 + t1)

        exact = np.nonzero(u[1:] == 0.0)[0] + 1                     # grid points on a zero
        cross = np.nonzero(np.sign(u[:-1]) * np.sign(u[1:]) < 0)[0]  # sign changes
        dips = np.nonzero((np.sign(u[:-1]) == np.sign(u[1:])) & (u[:-1] != 0)
                          & (np.sign(lo) != np.sign(hi)) & (lo != 0) & (hi != 0))[0]
        found = [sig[exact], roots(cross, np.zeros(cross.size), np.ones(cross.size))]
        if dips.size:                               # u dips through 0 and back inside one interval
            te = np.where(np.sign(lo[dips]) != np.sign(u[:-1][dips]), tlo[dips], thi[dips])
            found += [roots(dips, np.zeros(dips.size), te), roots(dips, te, np.ones(dips.size))]
        for f in found:
            xs += list(f)
            ks += [k] * len(f)
        if len(xs) > MAX_KINK_CANDIDATES:
            fail(GEOMETRY_NOT_SMOOTH, "smooth", len(xs),
                  f"{where}: the argument of an abs changes sign more than "
                  f"{MAX_KINK_CANDIDATES} times; the fence must be smooth")
    x = np.array(xs, dtype=float)
    keep = (x > 0) & (x <= sig[-1])
    x, ks = x[keep], [k for k, kp in zip(ks, keep) if kp]
    if not x.size:
        return
    g = num.grid(x)
    AL, _ = _branch_signs(num, g, -1.0)
    AR, _ = _branch_signs(num, g, +1.0)
    rows = np.arange(x.size)
    dk = g[rows, num._n + 1 + 2 * np.array(ks)]     # u_k' at its own zero: the sign it takes
    AL[rows, ks], AR[rows, ks] = -np.sign(dk), np.sign(dk)
    left = num.slope(np.column_stack([x, AL]))
    right = num.slope(np.column_stack([x, AR]))
    bad = ~(np.abs(right - left) <= 1e-9 * (1.0 + np.abs(left) + np.abs(right)))
    if bad.any():
        i = int(np.argmax(bad))
        fail(GEOMETRY_NOT_SMOOTH, "smooth", float(x[i]),
              f"{where}: the fence has a kink at s = {x[i]:.9g}, where abs({num.abs_args[ks[i]]}) "
              f"turns: its slope jumps by {right[i] - left[i]:.3g} (from {left[i]:.9g} to "
              f"{right[i]:.9g}); the fence must be "
              f"smooth (C1)")
