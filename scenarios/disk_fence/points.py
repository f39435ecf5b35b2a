"""A fence given as points of its height profile (issue 27: the FMI 3.0 FMU's Float64 array
input ``fence_points``): the cubic spline through them, as the same kind of profile the FMI 2.0
text input ``fence_curve`` gives (``scenarios/disk_fence/profile.py``), and its text.

The points (s_i, h_i), i = 1..n, are in the ramp frame of profile.py (s from P along the ramp
line, h the height above it, towards the disk), 0 < s_1 < ... < s_n.  The fence begins at P,
tangent to the ramp, as every fence must (h(0) = 0, h'(0) = 0: P is the spline's first knot
s_0 = 0, clamped), and ends at its last point (L_f = s_n), where h'' = 0 (natural end).  The
cubic spline through them is C2: the disk's centre, P + s t + h n + r N(s), then has continuous
speed (h'' continuous); h''' jumps at the knots, and so does its acceleration.

Its moments M_j = h''(s_j) solve the usual tridiagonal system (de Boor, A Practical Guide to
Splines, ch. IV): with d_j = s_{j+1} - s_j,
  2 d_0 M_0 + d_0 M_1 = 6 ((h_1 - h_0)/d_0 - h'(0)),
  d_{j-1} M_{j-1} + 2 (d_{j-1} + d_j) M_j + d_j M_{j+1}
      = 6 ((h_{j+1} - h_j)/d_j - (h_j - h_{j-1})/d_{j-1}),  j = 1..n-1,   M_n = 0,
and in the truncated-power basis the spline is
  h(s) = M_0/2 s^2 + c_0 s^3 + sum_{j=1}^{n-1} (c_j - c_{j-1}) ((s - s_j + |s - s_j|)/2)^3,
with c_j = (M_{j+1} - M_j) / (6 d_j), the third derivative's sixth on [s_j, s_{j+1}].  Written
with the whitelist's operators and abs (``spline_text``), it is a profile like any other text;
``profile`` builds the same sympy expression without the parser's size limits (a text of 32
points is longer than fence_curve's 400 characters).
"""

from __future__ import annotations

import math

from embed.base.lazy import LazyModule

from .profile import GEOMETRY_BAD_PARAMETER, FenceProfile, exact, fail

sp = LazyModule("sympy")                      # imported at the first use (issue 30)
SYM = LazyModule(__package__ + ".symbolic")   # the package's symbols (SIGMA)

N_MAX = 32                  # rows of the fence_points array (its first Dimension)
PREFIX = "points:"          # the description of a points fence (FMU state, messages, uid)


def check(points):
    """The points as a list of (s, h) floats, or GeometryError(GEOMETRY_BAD_PARAMETER)."""
    pts = [(float(s), float(h)) for s, h in points]
    if not 1 <= len(pts) <= N_MAX:
        fail(GEOMETRY_BAD_PARAMETER, "points", len(pts),
             f"a fence of points needs 1 to {N_MAX} points, got {len(pts)}")
    last = 0.0
    for i, (s, h) in enumerate(pts, start=1):
        if not (math.isfinite(s) and math.isfinite(h)):
            fail(GEOMETRY_BAD_PARAMETER, "points", (s, h), f"point {i} ({s!r}, {h!r}) is not finite")
        if not s > last:
            fail(GEOMETRY_BAD_PARAMETER, "points", s,
                 f"point {i}: s = {s!r} must be larger than {last!r} (the points in increasing s, "
                 "beyond P at s = 0)")
        last = s
    return pts


def coefficients(points):
    """(M_0 / 2, [c_0, ..., c_{n-1}], [s_1, ..., s_n]) of the spline (module docstring), in
    floats, computed the same way everywhere (plain Python: no BLAS to vary the last bits)."""
    pts = check(points)
    s = [0.0] + [p[0] for p in pts]
    h = [0.0] + [p[1] for p in pts]
    n = len(pts)
    d = [s[j + 1] - s[j] for j in range(n)]
    # rows j = 0..n-1 of the system for M_0..M_{n-1} (M_n = 0): sub, diag, sup, rhs
    sub, diag, sup, rhs = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    diag[0], sup[0], rhs[0] = 2 * d[0], d[0], 6 * ((h[1] - h[0]) / d[0] - 0.0)
    for j in range(1, n):
        sub[j], diag[j], sup[j] = d[j - 1], 2 * (d[j - 1] + d[j]), d[j]
        rhs[j] = 6 * ((h[j + 1] - h[j]) / d[j] - (h[j] - h[j - 1]) / d[j - 1])
    for j in range(1, n):                           # Thomas algorithm (diagonally dominant)
        w = sub[j] / diag[j - 1]
        diag[j] -= w * sup[j - 1]
        rhs[j] -= w * rhs[j - 1]
    M = [0.0] * (n + 1)
    for j in range(n - 1, -1, -1):
        M[j] = (rhs[j] - (sup[j] * M[j + 1] if j + 1 < n else 0.0)) / diag[j]
    c = [(M[j + 1] - M[j]) / (6 * d[j]) for j in range(n)]
    return M[0] / 2, c, s[1:]


def _terms(points):
    """[(coefficient, knot or None, power)] of h: a s^2, c_0 s^3, then (c_j - c_{j-1}) times
    ((s - s_j + |s - s_j|)/2)^3 written as k_j (s - s_j + |s - s_j|)^3, k_j = (c_j - c_{j-1})/8."""
    a, c, knots = coefficients(points)
    out = [(a, None, 2), (c[0], None, 3)]
    out += [((c[j] - c[j - 1]) / 8, knots[j - 1], 3) for j in range(1, len(c))]
    return out


def spline_text(points) -> str:
    """h(s) of the spline through ``points`` as fence_curve text (repr of each double: the
    parser makes each the exact rational ``profile.exact`` makes of it)."""
    parts = []
    for k, knot, p in _terms(points):
        parts.append(f"({k!r})*s**{p}" if knot is None
                     else f"({k!r})*(s - {knot!r} + abs(s - {knot!r}))**3")
    return " + ".join(parts)


def profile(points) -> FenceProfile:
    """The FenceProfile of the spline through ``points``: the expression the parser makes of
    ``spline_text`` (tests/test_fmi3_arrays.py checks they are equal), built without its
    size limits; its text is ``description(points)``."""
    h = sp.Integer(0)
    for k, knot, p in _terms(points):
        base = SYM.SIGMA if knot is None else SYM.SIGMA - exact(knot) + sp.Abs(SYM.SIGMA - exact(knot))
        h = sp.Add(h, sp.Mul(exact(k), sp.Pow(base, p)))
    return FenceProfile(h, "curve", None, description(points))


def description(points) -> str:
    """"points: s1 h1; s2 h2; ..." (repr of each double): names the fence in messages, in the
    FMU state and in its number (``modes.fence_uid``); ``from_description`` reads it back."""
    return PREFIX + " " + "; ".join(f"{s!r} {h!r}" for s, h in check(points))


def from_description(text):
    """The points of ``description``'s text (a serialized FMU state's); GeometryError if it is
    not one."""
    if not text.startswith(PREFIX):
        fail(GEOMETRY_BAD_PARAMETER, "points", text[:40], "not a points fence's description")
    try:
        rows = [tuple(float(x) for x in part.split()) for part in text[len(PREFIX):].split(";")]
    except ValueError:
        fail(GEOMETRY_BAD_PARAMETER, "points", text[:40], "a points fence's description that "
             "does not read as numbers")
    if any(len(r) != 2 for r in rows):
        fail(GEOMETRY_BAD_PARAMETER, "points", text[:40], "a point is not a pair (s h)")
    return check(rows)


def from_rows(values, count):
    """The first ``count`` points of the flat row-major ``values`` of fence_points[N_MAX][2]."""
    return [(values[2 * i], values[2 * i + 1]) for i in range(int(count))]
