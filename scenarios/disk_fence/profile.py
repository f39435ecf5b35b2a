"""A fence as a height profile h(s) over the ramp line beyond P: the run-time fence of the
disk_fence scenario (gillespie2005 Example 2, Sec 6.2, Fig 8; issue 4).

The master sends the fence either as an arc of radius R (fence_radius) or as free text
(fence_curve); ``FenceProfile`` is one description of both, with its derivatives, its jet (h
and three derivatives, what the fence of any profile needs) and compiled numerics for the
checks (``scenarios/disk_fence/checks.py``).  The text goes through the engine's whitelist parser
(``embed.base.expression``): nothing of it is ever executed.

Conventions (all of them used by the tests):

* Ramp frame: unit tangent t = (cos phi, sin phi) (the direction of increasing q4 on the
  ramp: the paper's ramp constraints u1 = u4 cos phi, u2 = u4 sin phi) and unit normal
  n = (-sin phi, cos phi), pointing to the side of the ramp the disk is on.
* Height profile: the fence is the graph of h over the ramp line beyond P,
  ``point(sigma) = P + sigma t + h(sigma) n``, sigma in [0, L_f].  sigma is the distance from P
  measured along t (not the arc length of the fence; that is ``FenceReport.path_length``), h the
  height of the fence above the extended ramp line, positive towards the disk (n side).
  The free text is h written in the variable ``s`` (= sigma), e.g. ``"0.1*s**2"``.
* Signed curvature kappa = h'' / (1 + h'^2)^(3/2); kappa > 0 bends the fence towards the disk
  (concave as the disk sees it, the disk rides on the inside).
* The arc of Example 2: centre C = P + R n on the normal at P, on the disk's side, so that the
  disk's centre moves on a circle of radius R - r about C, which is the factor (R - r)/R of the
  paper's fence constraints.  As a height profile h(sigma) = R - sqrt(R^2 - sigma^2),
  kappa = 1/R, defined for sigma < R (a quarter turn; sigma_end = R sin(L_arc / R) for an arc of
  arc length L_arc, see ``arc_sigma_extent``).
  The paper's stated constraints u1 = -(R-r)/R u4 cos((q4-L)/R - phi),
  u2 = (R-r)/R u4 sin((q4-L)/R - phi) describe this same circle about C and the same speed
  (R - r)/R |u4|, but with the path coordinate running backwards from P: they equal
  d/dt of the disk centre on this arc after q4 - L -> -(q4 - L), u4 -> -u4 (checked in
  tests/test_geometry.py).  Read literally, they start at P opposite to the ramp's own
  u1 = u4 cos phi, u2 = u4 sin phi; we keep the ramp's direction so that the path is C1 at P.

Every rejection is a ``GeometryError`` with a ``code`` for the FMU's geometry_status output
(``GEOMETRY_*`` below), the name of the ``check`` and the offending ``value``.
"""

from __future__ import annotations

import math

import numpy as np
from embed.base import errors
from embed.base.errors import ExpressionError
from embed.base.lazy import LazyModule, symengine as se
from embed.base.record import Record

# sympy, and the package's symbols (SIGMA), imported at their first use: a scenario image's
# stepping process imports this module without them (issue 30)
sp = LazyModule("sympy")
SYM = LazyModule(__package__ + ".symbolic")

# geometry_status codes (the FMU output); 0 = the geometry in use is good
GEOMETRY_OK = 0
GEOMETRY_SYNTAX = errors.SYNTAX          # 1: empty, bad characters, too long/deep/large, unparsed
GEOMETRY_NOT_ALLOWED = errors.NOT_ALLOWED  # 2: a name, function, operator, ... not whitelisted
GEOMETRY_NOT_FINITE = errors.NOT_FINITE    # 3: h, h' or h'' not finite or not real on [0, L_f]
GEOMETRY_NOT_TANGENT = 4    # h(0) != 0 or h'(0) != 0: not continuous/tangent with the ramp at P
GEOMETRY_NOT_SMOOTH = 5     # a kink: h' jumps where the argument of an abs changes sign
GEOMETRY_CURVATURE = 6      # curvature above the limit
GEOMETRY_BAD_PARAMETER = 7  # radius or length NaN, infinite, <= 0; arc longer than a quarter turn
GEOMETRY_TIMEOUT = 8        # the checks did not finish within their time limit (checks.py)
GEOMETRY_ON_FENCE = 9       # announced while the disk rolls on a fence: entering it would
#                             move the disk (issue 33); refused, the fence in use kept
GEOMETRY_NO_ANSWER = 10     # the background workers never answered (hung or dead twice)


class GeometryError(ExpressionError):
    """A fence geometry from outside is rejected (the FMU keeps its last good one): ``code``
    the geometry_status code (GEOMETRY_*), ``check`` the failed check, ``value`` the offending
    token, name or number."""


def __getattr__(name):      # SIGMA, the profile's variable (the distance from P): symbolic's
    if name == "SIGMA":
        return SYM.SIGMA
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_symengine(expr):
    """``embed.model.model.to_symengine`` (imported at the first call: it imports sympy)."""
    from embed.model.model import to_symengine as convert
    return convert(expr)


def fail(code, check, value, message):
    """Raise GeometryError(message) with ``code``, ``check`` and ``value``."""
    raise GeometryError(message, code=code, check=check, value=value)


def parse_profile(text) -> sp.Expr:
    """h(s) parsed from ``text`` through the whitelist (``embed.base.expression.parse_expression``).

    Parameters
    ----------
    text : str
        the height profile in the variable s, e.g. ``"0.045*s**2"``.

    Returns
    -------
    sympy.Expr in SIGMA.  Raises GeometryError (codes 1-3) with the parser's check and value.
    """
    try:
        from embed.base.expression import parse_expression
        return parse_expression(text, ("s",))
    except GeometryError:
        raise
    except ExpressionError as exc:
        raise GeometryError(str(exc), code=exc.code, check=exc.check, value=exc.value) from None


def positive_finite(x, what, check):
    """float(x), or GeometryError(GEOMETRY_BAD_PARAMETER) if it is not finite and > 0."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        fail(GEOMETRY_BAD_PARAMETER, check, x, f"{what} {x!r} is not a number")
    if not math.isfinite(v) or v <= 0.0:
        fail(GEOMETRY_BAD_PARAMETER, check, v, f"{what} = {v} must be finite and > 0")
    return v


def _critical(expr):
    """Subexpressions u whose zeros make h, h' or h'' singular, with what is required of them.

    (u, "nonzero", why): u must not vanish on [0, L_f] (a denominator; the argument of log; cos
    of the argument of tan; 1 - u^2 for asin/acos; the base of a fractional power p < 2).
    (u, "nonnegative", why): u must not become negative (the base of a fractional power p > 2).
    With these, h, h' and h'' are continuous except where the argument of an abs changes sign
    (every whitelisted function is smooth elsewhere): the kinks ``validate`` looks for there.
    """
    out, seen = [], set()

    def add(u, need, why):
        if u.has(SYM.SIGMA) and (u, need) not in seen:
            seen.add((u, need))
            out.append((u, need, why))

    for e in sp.preorder_traversal(expr):
        if isinstance(e, sp.Pow) and e.exp.is_Number:
            p = e.exp
            if p < 0:
                add(e.base, "nonzero", f"denominator {e.base}")
            elif not p.is_Integer:
                if p < 2:
                    add(e.base, "nonzero", f"base of the power {e}")
                else:
                    add(e.base, "nonnegative", f"base of the power {e}")
        elif isinstance(e, sp.log):
            add(e.args[0], "nonzero", f"argument of {e}")
        elif isinstance(e, sp.tan):
            add(sp.cos(e.args[0]), "nonzero", f"cos of the argument of {e}")
        elif isinstance(e, (sp.asin, sp.acos)):
            add(1 - e.args[0] ** 2, "nonzero", f"1 - (argument)^2 of {e}")
    return out


def hermite(u, du, ds):
    """Cubic Hermite interpolant of u on every grid interval from values and slopes:
    coefficients of p(t) = a t^3 + b t^2 + c t + u0, t in [0, 1], and its extremes."""
    u0, u1, d0, d1 = u[:-1], u[1:], ds * du[:-1], ds * du[1:]
    a = 2 * (u0 - u1) + d0 + d1
    b = 3 * (u1 - u0) - 2 * d0 - d1
    c = d0
    lo, hi = np.minimum(u0, u1), np.maximum(u0, u1)
    tlo, thi = np.where(u0 <= u1, 0.0, 1.0), np.where(u0 <= u1, 1.0, 0.0)
    disc = b * b - 3 * a * c                      # p'(t) = 3 a t^2 + 2 b t + c
    sq = np.sqrt(np.maximum(disc, 0.0))
    cubic = np.abs(a) > 1e-14 * (np.abs(b) + np.abs(c) + 1e-300)
    for t in (np.where(cubic, (-b + sq) / (3 * a), -c / (2 * b)),
              np.where(cubic, (-b - sq) / (3 * a), np.nan)):
        ok = np.isfinite(t) & (t > 0) & (t < 1) & (disc >= 0)
        pt = ((a * t + b) * t + c) * t + u0
        newlo, newhi = ok & (pt < lo), ok & (pt > hi)
        lo, tlo = np.where(newlo, pt, lo), np.where(newlo, t, tlo)
        hi, thi = np.where(newhi, pt, hi), np.where(newhi, t, thi)
    return (a, b, c, u0), (lo, tlo), (hi, thi)


def _branch_sign(u):
    """sign(u) for A_k of ``_abs_as_symbols``; 1 for u = b**p, p fractional (positive wherever it
    is real): symengine 0.15 crashes (segmentation fault) converting some of their signs, e.g.
    sign(sqrt(-s))."""
    if isinstance(u, sp.Pow) and u.exp.is_Number and not u.exp.is_Integer:
        return sp.Integer(1)
    return sp.sign(u)


def _abs_as_symbols(expr, memo=None):
    """Replace every abs(u) (innermost first) by u * A_k with a symbol A_k (one per distinct abs).

    Returns the new expression and [(A_k, u_k with inner A_j, u_k as written)] in creation order
    (inner before outer), so that derivatives can be taken with A_k constant
    (d abs(u)/ds = sign(u) u' away from u = 0) and A_k = sign(u_k) given afterwards.
    Pass the same ``memo`` dict to transform further expressions with the same A_k.
    """
    memo = {} if memo is None else memo

    def walk(e):
        if not e.args:
            return e
        if isinstance(e, sp.Abs) and e in memo:
            k, arg, _ = memo[e]
            return arg * k
        args = [walk(a) for a in e.args]
        if isinstance(e, sp.Abs):
            k = sp.Symbol(f"_abs{len(memo)}", real=True)   # no clash: variables start with a letter
            memo[e] = (k, args[0], e.args[0])
            return sp.Mul(args[0], k, evaluate=False)
        if all(a is b for a, b in zip(args, e.args)):
            return e
        # rebuilt unevaluated: sympy's automatic evaluation of nested functions of a new symbol
        # grows exponentially with the nesting (cosh(cosh(...abs(s)...)): minutes at depth 25)
        return e.func(*args, evaluate=False)

    out = walk(expr)
    return out, sorted(memo.values(), key=lambda v: int(v[0].name[4:]))


class _Numeric:
    """Compiled numerics of a profile: symengine Lambdify (interpreted backend, with CSE), built
    many times faster than with sympy's diff and lambdify (docs/design.md, facts).

    Every abs(u_k) is u_k A_k with A_k a symbol, differentiated with A_k constant, and evaluated
    with A_k = sign(u_k) computed numerically, inner abs first.  (symengine's own sign() is not
    used: ``symengine.sign(symengine.sqrt(-s))`` crashes symengine 0.15 with a segmentation
    fault.)

    ``grid(sig)`` -> columns h, h', h'', then (u, u') for every critical subexpression, then
    (u_k, u_k') for the argument of every abs.  ``slope(rows)`` -> h' on rows
    (sigma, A_0, ..., A_m) with the branch of every abs given: one-sided limits at a zero of u_k.
    """

    def __init__(self, h):
        self.critical = _critical(h)
        memo = {}
        g, _ = _abs_as_symbols(h, memo)
        crit = [_abs_as_symbols(u, memo)[0] for u, _, _ in self.critical]
        back = _abs_as_symbols(sp.Integer(0), memo)[1]
        self.abs_args = [plain for _, _, plain in back]
        S = se.Symbol(SYM.SIGMA.name)        # symengine converts symbols by name (assumptions dropped)
        args = [S] + [se.Symbol(k.name) for k, _, _ in back]
        try:
            G = to_symengine(g)
            d1 = G.diff(S)
            out = [G, d1, d1.diff(S)]
            for u in crit:
                U = to_symengine(u)
                out += [U, U.diff(S)]
            self._n = len(out)
            self._main = se.Lambdify(args, out, backend="lambda", real=True, cse=True)
            self._abs = []
            for _, u, _ in back:
                U = to_symengine(u)
                self._abs.append(se.Lambdify(args, [U, U.diff(S)], backend="lambda", real=True,
                                             cse=True))
        except GeometryError:
            raise
        except Exception as e:   # noqa: BLE001 - any conversion failure means unusable geometry
            fail(GEOMETRY_NOT_FINITE, "evaluate", str(h),
                  f"profile {h} cannot be evaluated numerically ({type(e).__name__}: {e})")

    @staticmethod
    def _call(f, rows, n):
        with np.errstate(all="ignore"):
            v = f(rows)
        return np.asarray(v, dtype=float).reshape(len(rows), n)

    def grid(self, sig):
        sig = np.asarray(sig, dtype=float).reshape(-1)
        m = len(self._abs)
        rows = np.zeros((sig.size, 1 + m))
        rows[:, 0] = sig
        absvals = np.zeros((sig.size, 2 * m))
        for k, f in enumerate(self._abs):          # inner abs first: A_k = sign(u_k)
            v = self._call(f, rows, 2)
            absvals[:, 2 * k:2 * k + 2] = v
            rows[:, 1 + k] = np.sign(v[:, 0])
        return np.hstack([self._call(self._main, rows, self._n), absvals])

    def abs_columns(self, vals, k):
        j = self._n + 2 * k
        return vals[:, j], vals[:, j + 1]

    def slope(self, rows):
        rows = np.asarray(rows, dtype=float).reshape(len(rows), -1)
        return self._call(self._main, rows, self._n)[:, 1]


def exact(x: float) -> sp.Rational:
    """The exact rational the parser makes of the literal repr(x)."""
    from fractions import Fraction   # (with decimal: 3-5 ms of the FMU's start if at the top)
    f = Fraction(repr(float(x)))
    return sp.Rational(f.numerator, f.denominator)


class FenceProfile(Record):
    """A fence as a height profile h(sigma) over the ramp line beyond P (module docstring).

    ``h`` is a sympy expression in SIGMA = Symbol("s", real=True); ``kind`` is "arc" or "curve";
    ``radius`` the arc's R (None for a curve); ``text`` the source text of a curve.
    Build with ``FenceProfile.arc(R)`` or ``FenceProfile.from_text(text)``; check with ``validate``.
    Pickles as (h, kind, radius, text); compiled numerics are rebuilt on demand.  A frozen
    ``embed.base.record.Record`` (equal, hashed and shown by its four fields; ``_cache`` is
    not one): no ``dataclasses`` in the FMU's start (issue 30).
    """

    FIELDS = ("h", "kind", "radius", "text")
    FROZEN = True

    def __init__(self, h, kind: str, radius: float | None = None, text: str | None = None):
        self.__dict__.update(h=h, kind=kind, radius=radius, text=text, _cache={})

    def __reduce__(self):
        return (FenceProfile, (self.h, self.kind, self.radius, self.text))

    @classmethod
    def arc(cls, R) -> "FenceProfile":
        """The circular arc of radius R > 0 tangent to the ramp at P, centre C = P + R n:
        h(sigma) = R - sqrt(R^2 - sigma^2), written sigma^2 / (R + sqrt(R^2 - sigma^2)) so that
        no digits cancel for large R (sigma < R)."""
        R = positive_finite(R, "fence radius R", "radius")
        Rs = exact(R)
        return cls(SYM.SIGMA ** 2 / (Rs + sp.sqrt(Rs ** 2 - SYM.SIGMA ** 2)), "arc", R, None)

    @classmethod
    def from_text(cls, text) -> "FenceProfile":
        """Parse a height profile h(s) from text (``parse_profile``)."""
        return cls(parse_profile(text), "curve", None, text)

    def derivatives(self):
        """(h, h', h'') as sympy expressions in SIGMA (abs(u) differentiates to sign(u) u', and to
        u' for u a fractional power, positive wherever it is real).
        For the arc in closed form: h' = sigma/sqrt(R^2 - sigma^2), h'' = R^2/(R^2 - sigma^2)^(3/2)."""
        if "d" not in self._cache and self.kind == "arc" and self.radius is not None:
            R = exact(self.radius)
            root = sp.sqrt(R ** 2 - SYM.SIGMA ** 2)
            self._cache["d"] = (self.h, SYM.SIGMA / root, R ** 2 / root ** 3)
        if "d" not in self._cache:
            g, back = _abs_as_symbols(self.h)
            d1 = sp.diff(g, SYM.SIGMA)
            d = [d1, sp.diff(d1, SYM.SIGMA)]
            for k, u, _ in reversed(back):
                d = [e.subs(k, _branch_sign(u)) for e in d]
            self._cache["d"] = (self.h, d[0], d[1])
        return self._cache["d"]

    def jet(self):
        """The jet [h, dh/ds, d2h/ds2, d3h/ds3] as symengine expressions of the symbol named like
        SIGMA: what a fence of this profile needs at its contact point (its centre and normal,
        their first and second derivatives).  Differentiated in symengine (sympy's diff costs
        milliseconds), every abs(u) as u A_k with A_k constant, then A_k = sign(u)
        (``derivatives``)."""
        g, back = _abs_as_symbols(self.h)
        S = se.Symbol(SYM.SIGMA.name)
        try:
            d = [to_symengine(g)]
            for _ in range(3):
                d.append(d[-1].diff(S))
            for k, u, _ in reversed(back):
                sg = to_symengine(_branch_sign(u))
                d = [e.subs({se.Symbol(k.name): sg}) for e in d]
        except Exception as e:   # noqa: BLE001 - any conversion failure means unusable geometry
            fail(GEOMETRY_NOT_FINITE, "evaluate", str(self.h),
                  f"profile {self.h} cannot be differentiated ({type(e).__name__}: {e})")
        return d

    def evaluator(self):
        """f(sigma array) -> (h, h', h'') float arrays (nan where not real; at a zero of an abs
        argument, sign(0) = 0 is used)."""
        num = self.numeric()

        def f(sig):
            sig = np.asarray(sig, dtype=float)
            vals = num.grid(sig.ravel())
            return tuple(vals[:, i].reshape(sig.shape).copy() for i in range(3))
        return f

    def numeric(self) -> _Numeric:
        if "n" not in self._cache:
            self._cache["n"] = _Numeric(self.h)
        return self._cache["n"]

    def describe(self):
        """Short name for messages: "arc R=2" or "curve h(s) = '<text>'"."""
        if self.kind == "arc" and self.radius is not None:
            return f"arc R={self.radius:g}"
        return f"curve h(s) = {(self.text.strip() if self.text else str(self.h))!r}"


def arc_sigma_extent(R, arc_length):
    """sigma_end = R sin(L_arc / R) of an arc of arc length L_arc (< pi/2 R: a height profile)."""
    R = positive_finite(R, "fence radius R", "radius")
    a = positive_finite(arc_length, "fence arc length", "length")
    if a / R >= math.pi / 2:
        fail(GEOMETRY_BAD_PARAMETER, "length", a,
              f"arc length {a:g} turns the arc of radius {R:g} through {a / R:.4g} rad >= pi/2: "
              f"beyond a quarter turn the fence is no height profile over the ramp line; "
              f"use an arc length below {math.pi / 2 * R:.6g}")
    return R * math.sin(a / R)
