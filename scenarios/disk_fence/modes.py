"""The fences of disk_fence as constraints and modes: a fence of a given profile, the fence of any
profile (h an undefined function), and the two families compiled with the automaton (the arc
of radius R_arc and the polynomial c2 s^2 + c3 s^3), whose members are chosen by discrete
variables.  The disk centre on a fence is P + s t + h(s) n + r N(s), s = q4 - L (conventions:
``scenarios/disk_fence/profile.py``); gillespie2005 Example 2, Sec 6.2.
"""

from __future__ import annotations

import math

try:        # hashlib's own BLAKE2b, without hashlib's import (OpenSSL: ~6 ms of the FMU's start)
    from _blake2 import blake2b
except ImportError:
    from hashlib import blake2b

from embed import Guard, Mode
from embed.base.errors import ModelDefinitionError
from embed.base.lazy import LazyModule
from embed.base.lazy import symengine as se

from .profile import FenceProfile, to_symengine

# sympy and the package's symbols (SIGMA, PROFILE_H, R_ARC, LF_ARC, POLY_C, LF_POLY: ``symbolic``)
# imported at their first use: a scenario image's stepping process imports this module
# without them (issue 30)
sp = LazyModule("sympy")
SYM = LazyModule(__package__ + ".symbolic")

FREE, RAMP, FENCE = 1, 2, 3
FENCE_BASE = 100      # mode id of a fence: FENCE_BASE + its unique number
_UIDS = iter(range(1, 1 << 30))   # numbers of fences made by next_uid() in this process


def fence_uid(text, L_f):
    """The number of the free-form fence ``text`` of length ``L_f``: from its description, so
    that it is the same in every process (a serialized FMU state names its fence by it) and
    the same fence announced again is the one already installed.

    Parameters
    ----------
    text : str
        the profile's text (fence_curve).
    L_f : float
        the fence's length along the ramp line.

    Returns
    -------
    int in [1, 2**30 - 1]; the fence's mode id is FENCE_BASE + it.
    """
    d = blake2b(f"{text}\0{float(L_f)!r}".encode(), digest_size=8).digest()
    return 1 + int.from_bytes(d, "little") % ((1 << 30) - 1)


def normal_force(cx, cy, nx, ny):
    """N = lambda . n: the contact constraints' multipliers are the force on the disk centre."""
    S = se.Symbol if isinstance(nx, se.Basic) else sp.Symbol
    return S("lambda_" + cx) * nx + S("lambda_" + cy) * ny


def next_uid():
    """A number for a fence made in this process and never seen elsewhere (1, 2, ...)."""
    return next(_UIDS)


def fence_mode(uid, profile: FenceProfile | None, L_f, mode_id=None):
    """The constraints and the mode of a fence, numbered ``uid`` (unique in the process).
    ``L_f`` may be a number or a symbol (a discrete variable).  ``profile`` None: the fence
    of any profile, h an undefined function of q4 (``profile_family``); a profile with abs()
    has only that family's embedding.

    Parameters
    ----------
    uid : int or str
        names the constraints fence<uid>_x, fence<uid>_y and the mode.
    profile : FenceProfile or None
    L_f : float or symbol
    mode_id : int, optional
        default FENCE_BASE + uid.

    Returns
    -------
    ({constraint name: Phi expression}, Mode)
    """
    if profile is not None and profile.h.has(sp.Abs):
        raise ModelDefinitionError(f"{profile.describe()}: a profile with abs() has no symbolic "
                                   "fence mode (its terms would differentiate sign()); use "
                                   "install_profile")
    x, y, nx, ny, q, L = _centre_and_normal_se(profile)
    cx, cy = f"fence{uid}_x", f"fence{uid}_y"
    N = normal_force(cx, cy, nx, ny)
    L_f = sp.Float(L_f) if isinstance(L_f, (int, float)) else L_f     # a number or a symbol
    L_f = to_symengine(L_f) if isinstance(x, se.Basic) else L_f
    return ({cx: (q[0] - x), cy: (q[1] - y)},
            Mode(FENCE_BASE + uid if mode_id is None else mode_id, _fence_name(uid), (cx, cy), (), (
                Guard("fence_end", L + L_f - q[3], -1),
                Guard("back_to_ramp", q[3] - L, -1),
                Guard("release", N, -1)),
                outputs=(("N", N),), report=FENCE))


def _fence_name(uid):
    """The mode's name: "fence 3" for the third fence announced, "fence_arc" for a family."""
    return f"fence{uid}" if str(uid).startswith("_") else f"fence {uid}"


def _centre_and_normal_se(profile):
    """Disk centre P + s t + h(s) n + r N(s) and the fence normal N at s = q4 - L, formed in
    symengine (scenarios/disk_fence/profile.py's conventions; faster than in sympy).  With
    ``profile`` None, h is the undefined function PROFILE_H of q4 (d/dq4 = d/ds)."""
    q = [se.Symbol(f"q{i}") for i in range(1, 5)]
    r, phi, L = se.symbols("r phi L")
    if profile is None:
        S, sub = q[3] - L, {}
        h = SYM.PROFILE_H(q[3])
        h1 = h.diff(q[3])
    else:
        S = se.Symbol(SYM.SIGMA.name)
        sub = {S: q[3] - L}
        h = to_symengine(profile.h)      # SIGMA becomes the plain symengine symbol of its name
        h1 = h.diff(S)
    tx, ty, nx, ny = se.cos(phi), se.sin(phi), -se.sin(phi), se.cos(phi)
    w = se.sqrt(1 + h1 ** 2)
    Nx, Ny = (nx - h1 * tx) / w, (ny - h1 * ty) / w
    x = (L * tx + S * tx + h * nx + r * Nx).subs(sub)
    y = (L * ty + S * ty + h * ny + r * Ny).subs(sub)
    return x, y, Nx.subs(sub), Ny.subs(sub), q, L


ARC = FENCE            # the arc family's mode: its radius and length are discrete variables
POLY = 4               # the polynomial family's mode: h = c2 s^2 + c3 s^3


def arc_family():
    """The parameterized fence of issue 4, an arc of radius R_arc tangent to the ramp at P with
    its centre on the normal at P, compiled with the automaton: announcing one only sets
    R_arc and Lf_arc.  (A free-form fence is embedded when it arrives.)"""
    R = SYM.R_ARC
    return fence_mode("_arc", FenceProfile(R - sp.sqrt(R ** 2 - SYM.SIGMA ** 2), "arc"),
                      SYM.LF_ARC, mode_id=ARC)


def poly_family():
    """Polynomial fences tangent to the ramp at P, h(s) = c2 s^2 + c3 s^3, compiled with the
    automaton like the arc: a free-form text that is such a polynomial (found by the worker's
    checks) is used by setting the coefficients, with no embedding of its own.  (With a quartic
    term too the embedded equations exceed what is solved symbolically, and a step costs ten
    times as much.)"""
    h = sum((c * SYM.SIGMA ** k for k, c in enumerate(SYM.POLY_C, start=2)), sp.Integer(0))
    return fence_mode("_poly", FenceProfile(h, "poly"), SYM.LF_POLY, mode_id=POLY)


def poly_coefficients(profile):
    """(c2, c3) if the profile is h = c2 s^2 + c3 s^3 exactly (the polynomial family), else
    None.

    Parameters
    ----------
    profile : FenceProfile

    Returns
    -------
    (c2, c3) as floats, or None.
    """
    h = profile.h
    if not h.is_polynomial(SYM.SIGMA):
        return None
    c = sp.Poly(h, SYM.SIGMA).all_coeffs()[::-1]
    n = 2 + len(SYM.POLY_C)
    if len(c) > n or any(v != 0 for v in c[:2]):
        return None
    c = [float(v) for v in c[2:]] + [0.0] * (n - len(c))
    return tuple(c) if all(math.isfinite(v) for v in c) else None


def __getattr__(name):
    """The symbols ``symbolic`` makes, under the names this module gave them."""
    if name in ("PROFILE_H", "R_ARC", "LF_ARC", "POLY_C", "LF_POLY"):
        return getattr(SYM, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
