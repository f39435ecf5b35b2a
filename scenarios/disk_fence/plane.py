"""The fence as a plane curve: the ramp's frame, the fence's points and frame, and the centre of
a disk touching it (sympy, for the tests and for forming constraints by hand).  Conventions:
``scenarios/disk_fence/profile.py``.
"""

from __future__ import annotations

import sympy as sp

from .profile import FenceProfile, exact
from .symbolic import SIGMA


def ramp_frame(phi):
    """Unit tangent t = (cos phi, sin phi) and normal n = (-sin phi, cos phi) of the ramp."""
    return (sp.cos(phi), sp.sin(phi)), (-sp.sin(phi), sp.cos(phi))


def _at(expr, sigma):
    return expr if sigma is None else expr.subs(SIGMA, sigma)


def fence_point(profile: FenceProfile, phi, P, sigma=None):
    """(x, y) = P + sigma t + h(sigma) n as sympy expressions in SIGMA, or in ``sigma`` if given
    (e.g. q4 - L).  phi and P = (Px, Py) may be numbers or sympy symbols."""
    (tx, ty), (nx, ny) = ramp_frame(phi)
    h = profile.h
    x, y = P[0] + SIGMA * tx + h * nx, P[1] + SIGMA * ty + h * ny
    return _at(x, sigma), _at(y, sigma)


def fence_frame(profile: FenceProfile, phi, sigma=None):
    """Unit tangent T (direction of increasing sigma) and unit normal N (towards the disk) of the
    fence: T = (t + h' n)/w, N = (n - h' t)/w, w = sqrt(1 + h'^2) (h' from
    ``profile.derivatives()``: sign(u) u' for abs(u))."""
    (tx, ty), (nx, ny) = ramp_frame(phi)
    if profile.kind == "arc" and profile.radius is not None:   # closed form: w = R/sqrt(R^2 - s^2)
        R = exact(profile.radius)
        c, sn = sp.sqrt(R ** 2 - SIGMA ** 2) / R, SIGMA / R     # cos and sin of the turn angle
        T = (c * tx + sn * nx, c * ty + sn * ny)
        N = (c * nx - sn * tx, c * ny - sn * ty)
        return tuple(_at(v, sigma) for v in T), tuple(_at(v, sigma) for v in N)
    h1 = profile.derivatives()[1]
    w = sp.sqrt(1 + h1 ** 2)
    T = ((tx + h1 * nx) / w, (ty + h1 * ny) / w)
    N = ((nx - h1 * tx) / w, (ny - h1 * ty) / w)
    return tuple(_at(c, sigma) for c in T), tuple(_at(c, sigma) for c in N)


def disk_centre_on_fence(profile: FenceProfile, phi, P, r, sigma=None):
    """Centre of a disk of radius r touching the fence at sigma from the disk's side:
    fence_point + r N.  With q1, q2 the centre, q1 - x = 0, q2 - y = 0 at sigma = q4 - L are the
    fence's configuration constraints (valid while kappa r < 1, which validate checks)."""
    x, y = fence_point(profile, phi, P)
    _, (Nx, Ny) = fence_frame(profile, phi)
    return _at(x + r * Nx, sigma), _at(y + r * Ny, sigma)
