"""Fence geometry that arrives at run time (gillespie2005 Example 2, Sec 6.2, Fig 8; issue 4).

A disk moves on a straight ramp through O at angle phi; at P (path length L from O) the ramp
continues into a fence F whose shape is only known at run time.  The master sends it either as
an arc of radius R (fence_radius) or as free text (fence_curve).  This module turns both into
one description, checks it, and hands the lead the plane curve to build the fence's
configuration constraint from.  Nothing here knows about the scenario or FMI.

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

Safety: the text is parsed with ``ast.parse(mode="eval")`` and converted node by node through a
whitelist into a sympy tree built by hand; eval, exec, compile, sympify and parse_expr never see
the text.  Numeric checks evaluate the trusted sympy tree (sympy.lambdify prints only whitelisted
symbol names and numbers).  Every rejection is a ``GeometryError`` with a ``code`` for the FMU's
geometry_status output (``GEOMETRY_*`` below), the name of the ``check`` and the offending
``value``.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp

from .errors import InputError

# geometry_status codes (the FMU output); 0 = the geometry in use is good
GEOMETRY_OK = 0
GEOMETRY_SYNTAX = 1         # empty, bad characters, too long/deep/large, does not parse
GEOMETRY_NOT_ALLOWED = 2    # a name, function, operator, construct, literal or exponent outside the whitelist
GEOMETRY_NOT_FINITE = 3     # h, h' or h'' not finite or not real somewhere on [0, L_f]
GEOMETRY_NOT_TANGENT = 4    # h(0) != 0 or h'(0) != 0: not continuous/tangent with the ramp at P
GEOMETRY_NOT_SMOOTH = 5     # a jump or a kink between grid points (h not C1)
GEOMETRY_CURVATURE = 6      # curvature above the limit
GEOMETRY_BAD_PARAMETER = 7  # radius or length NaN, infinite, <= 0; arc longer than a quarter turn

MAX_LENGTH = 400            # characters of text
MAX_DEPTH = 32              # nesting (parentheses; AST depth with +- and */ chains flattened)
MAX_NODES = 256             # AST nodes
MAX_LITERAL = 1e6           # |numeric literal|
MAX_EXPONENT = 10           # |exponent|, also after sympy folds powers of powers: (s**2)**6 = s**12
MAX_CONSTANT = 1e300        # |any constant sympy folds numbers into|
CONTINUITY_TOL = 1e-9       # |h(0)| (length units) and |h'(0)| at P
MAX_CURVATURE = 1e3         # default |kappa| limit (1/length): radius of curvature >= 1 mm in metres
N_GRID = 4000               # intervals of the check grid on [0, L_f]
SMOOTH_RTOL = 1e-3          # tolerance of the jump/kink test (see validate)

CONSTANTS = {"pi": sp.pi, "E": sp.E}
FUNCTIONS = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt,
    "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh, "asin": sp.asin, "acos": sp.acos,
    "atan": sp.atan, "abs": sp.Abs,
}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
           ast.Mod: "%", ast.FloorDiv: "//", ast.MatMult: "@", ast.BitXor: "^", ast.BitOr: "|",
           ast.BitAnd: "&", ast.LShift: "<<", ast.RShift: ">>"}
_CHAR_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ \t+-*/().")
_CHAR_HINT = {"^": "write powers as **", "'": "strings are not allowed", '"': "strings are not allowed",
              ",": "functions take exactly one argument", "\n": "write the expression on one line"}


class GeometryError(InputError):
    """A fence geometry from outside is rejected; the FMU keeps its last good geometry.

    ``code`` is the geometry_status code (GEOMETRY_*), ``check`` names the failed check,
    ``value`` the offending token, name or number.
    """

    def __init__(self, message, *, code, check, value=None):
        super().__init__(message)
        self.code, self.check, self.value = code, check, value


def symbol(name: str = "s") -> sp.Symbol:
    """The sympy symbol ``parse_expression`` makes for a variable name (real)."""
    return sp.Symbol(name, real=True)


SIGMA = symbol("s")
_ALLOWED_TEXT = (f"numbers, the variable(s) {{vars}}, pi, E, + - * / ** with a numeric exponent "
                 f"|e| <= {MAX_EXPONENT}, and one-argument functions {', '.join(FUNCTIONS)}")


def _fail(code, check, value, message):
    raise GeometryError(message, code=code, check=check, value=value)


# ---------------------------------------------------------------------------- parsing


def parse_expression(text, variables=("s",), max_length=MAX_LENGTH) -> sp.Expr:
    """Parse a real expression in ``variables`` through a whitelist into a sympy tree.

    Allowed: int/float literals (finite, |v| <= 1e6; decimals become exact rationals), the
    variables (real sympy symbols), pi, E, unary + -, binary + - * /, ``**`` with an exponent that
    is a numeric literal or a fraction of two (|e| <= 10), and calls of one positional argument
    to sin cos tan exp log sqrt sinh cosh tanh asin acos atan abs.  Nothing else.
    Raises GeometryError naming the offending token and what is allowed.
    """
    for v in variables:
        if (not isinstance(v, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", v)
                or keyword.iskeyword(v) or v in FUNCTIONS or v in CONSTANTS):
            raise ValueError(f"variable name {v!r} must be a plain identifier other than a "
                             f"keyword, a function or a constant name")
    allowed = _ALLOWED_TEXT.format(vars=", ".join(variables))
    if not isinstance(text, str):
        _fail(GEOMETRY_SYNTAX, "type", type(text).__name__,
              f"expression must be a string, got {type(text).__name__}")
    if len(text) > max_length:
        _fail(GEOMETRY_SYNTAX, "length", len(text),
              f"expression has {len(text)} characters; at most {max_length} are allowed")
    for i, c in enumerate(text):
        if c not in _CHAR_OK:
            hint = _CHAR_HINT.get(c, "allowed are ASCII letters, digits, spaces, _ + - * / ( ) and .")
            _fail(GEOMETRY_SYNTAX, "character", c,
                  f"character {c!r} (U+{ord(c):04X}) at position {i} is not allowed: {hint}")
    text = text.strip()
    if not text:
        _fail(GEOMETRY_SYNTAX, "empty", "", f"expression is empty; write {allowed}")
    depth = 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth > MAX_DEPTH:
            _fail(GEOMETRY_SYNTAX, "depth", depth,
                  f"parentheses nested deeper than {MAX_DEPTH} at position {i}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        _fail(GEOMETRY_SYNTAX, "syntax", text,
              f"expression does not parse ({e.msg} at column {e.offset}); write {allowed}")
    except (ValueError, MemoryError, RecursionError) as e:    # pragma: no cover - guarded above
        _fail(GEOMETRY_SYNTAX, "syntax", text, f"expression does not parse ({type(e).__name__})")
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_NODES:
        _fail(GEOMETRY_SYNTAX, "size", nodes,
              f"expression has {nodes} syntax nodes; at most {MAX_NODES} are allowed")
    expr = _Converter(text, tuple(variables), allowed).convert(tree.body, 0)
    _check_result(expr)
    return expr


class _Converter:
    """Whitelisted ast -> sympy, building every node by hand."""

    def __init__(self, text, variables, allowed):
        self.text, self.allowed = text, allowed
        self.symbols = {v: symbol(v) for v in variables}

    def where(self, node):
        return f"at column {getattr(node, 'col_offset', 0) + 1}"

    def convert(self, node, depth):
        if depth > MAX_DEPTH:
            _fail(GEOMETRY_SYNTAX, "depth", depth,
                  f"expression nested deeper than {MAX_DEPTH} {self.where(node)}")
        if isinstance(node, ast.Constant):
            out = self.literal(node)
        elif isinstance(node, ast.Name):
            out = self.name(node)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.UAdd, ast.USub)):
                op = {ast.Not: "not", ast.Invert: "~"}.get(type(node.op), type(node.op).__name__)
                _fail(GEOMETRY_NOT_ALLOWED, "operator", op,
                      f"operator {op!r} {self.where(node)} is not allowed; use {self.allowed}")
            x = self.convert(node.operand, depth + 1)
            out = -x if isinstance(node.op, ast.USub) else x
        elif isinstance(node, ast.BinOp):
            out = self.binop(node, depth)
        elif isinstance(node, ast.Call):
            out = self.call(node, depth)
        else:
            what = _describe(node)
            _fail(GEOMETRY_NOT_ALLOWED, "construct", what,
                  f"{what} {self.where(node)} is not allowed; use {self.allowed}")
        if out.is_Number:
            _check_number(out, node, self)
        return out

    def literal(self, node):
        v = node.value
        if type(v) not in (int, float):     # bool is an int subclass: excluded here
            what = "string" if isinstance(v, (str, bytes)) else f"{type(v).__name__} literal"
            _fail(GEOMETRY_NOT_ALLOWED, "literal", repr(v),
                  f"{what} {v!r} {self.where(node)} is not allowed; only real numbers")
        seg = ast.get_source_segment(self.text, node) or repr(v)
        if isinstance(v, float) and not math.isfinite(v):
            _fail(GEOMETRY_NOT_ALLOWED, "literal_range", seg,
                  f"number {seg} {self.where(node)} is not finite; |number| <= {MAX_LITERAL:g} allowed")
        if abs(v) > MAX_LITERAL:
            _fail(GEOMETRY_NOT_ALLOWED, "literal_range", seg,
                  f"number {seg} {self.where(node)} is out of range; |number| <= {MAX_LITERAL:g} allowed")
        if isinstance(v, float):
            if v == 0.0 and re.search(r"[1-9]", re.split(r"[eE]", seg)[0]):
                _fail(GEOMETRY_NOT_ALLOWED, "literal_range", seg,
                      f"number {seg} {self.where(node)} underflows to 0")
            f = Fraction(repr(v))           # the shortest decimal of the double, exactly
            return sp.Rational(f.numerator, f.denominator)
        return sp.Integer(v)

    def name(self, node):
        n = node.id
        if n in self.symbols:
            return self.symbols[n]
        if n in CONSTANTS:
            return CONSTANTS[n]
        if n in FUNCTIONS:
            _fail(GEOMETRY_NOT_ALLOWED, "name", n,
                  f"function {n!r} {self.where(node)} must be called with one argument, e.g. {n}(s)")
        _fail(GEOMETRY_NOT_ALLOWED, "name", n,
              f"unknown name {n!r} {self.where(node)}; allowed names: "
              f"{', '.join(list(self.symbols) + list(CONSTANTS))}; use {self.allowed}")

    def binop(self, node, depth):
        op = type(node.op)
        if op not in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow):
            sym = _BINOPS.get(op, op.__name__)
            hint = "; write powers as **" if sym == "^" else ""
            _fail(GEOMETRY_NOT_ALLOWED, "operator", sym,
                  f"operator {sym!r} {self.where(node)} is not allowed{hint}; use {self.allowed}")
        if op is ast.Pow:
            return self.power(node, depth)
        # flatten left-leaning chains a + b - c + ... (or a * b / c ...) without adding depth
        group = (ast.Add, ast.Sub) if op in (ast.Add, ast.Sub) else (ast.Mult, ast.Div)
        chain = []
        while isinstance(node, ast.BinOp) and type(node.op) in group:
            chain.append((type(node.op), node.right))
            node = node.left
        out = self.convert(node, depth + 1)
        for kind, right in reversed(chain):
            x = self.convert(right, depth + 1)
            if kind is ast.Add:
                out = sp.Add(out, x)
            elif kind is ast.Sub:
                out = sp.Add(out, sp.Mul(sp.Integer(-1), x))
            elif kind is ast.Mult:
                out = sp.Mul(out, x)
            else:
                out = sp.Mul(out, sp.Pow(x, sp.Integer(-1)))
            if out.is_Number:
                _check_number(out, right, self)
        return out

    def power(self, node, depth):
        e = self.exponent(node.right)
        base = self.convert(node.left, depth + 1)
        if base.is_Number and base != 0 and abs(float(e)) * abs(math.log10(abs(float(base)))) > 300:
            seg = ast.get_source_segment(self.text, node)
            _fail(GEOMETRY_NOT_ALLOWED, "literal_range", seg,
                  f"constant {seg} {self.where(node)} is out of range (above {MAX_CONSTANT:g})")
        out = sp.Pow(base, e)
        _check_exponents(out, node, self)
        return out

    def exponent(self, node):
        """The exponent of **: a numeric literal or a fraction of two, each optionally signed,
        the whole optionally signed (2, -1, 0.5, 3/2, -(1/2), -3/-2)."""
        def number(n, fraction, depth=0):
            if depth > MAX_DEPTH:
                _fail(GEOMETRY_SYNTAX, "depth", depth, f"exponent nested deeper than {MAX_DEPTH}")
            if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.UAdd, ast.USub)):
                x = number(n.operand, fraction, depth + 1)
                return None if x is None else (-x if isinstance(n.op, ast.USub) else x)
            if isinstance(n, ast.Constant):
                return self.literal(n)
            if fraction and isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
                a, b = number(n.left, False), number(n.right, False)
                if a is None or b is None:
                    return None
                if b == 0:
                    seg = ast.get_source_segment(self.text, n)
                    _fail(GEOMETRY_NOT_ALLOWED, "exponent", seg,
                          f"exponent {seg} {self.where(n)} divides by zero")
                return a / b
            return None

        e = number(node, True)
        if e is None:
            seg = ast.get_source_segment(self.text, node)
            _fail(GEOMETRY_NOT_ALLOWED, "exponent", seg,
                  f"exponent {seg!r} {self.where(node)} is not allowed: an exponent must be a number "
                  f"or a fraction of two numbers with |exponent| <= {MAX_EXPONENT} (use exp(x) for E**x)")
        if abs(e) > MAX_EXPONENT:
            _fail(GEOMETRY_NOT_ALLOWED, "exponent", str(e),
                  f"exponent {e} {self.where(node)} is out of range; |exponent| <= {MAX_EXPONENT} allowed")
        return e

    def call(self, node, depth):
        f = node.func
        if not isinstance(f, ast.Name):
            what = _describe(f)
            _fail(GEOMETRY_NOT_ALLOWED, "call", what,
                  f"calling {what} {self.where(node)} is not allowed; functions: {', '.join(FUNCTIONS)}")
        if f.id not in FUNCTIONS:
            _fail(GEOMETRY_NOT_ALLOWED, "function", f.id,
                  f"unknown function {f.id!r} {self.where(node)}; allowed functions: "
                  f"{', '.join(FUNCTIONS)}")
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            _fail(GEOMETRY_NOT_ALLOWED, "arguments", f.id,
                  f"function {f.id!r} {self.where(node)} takes exactly one positional argument")
        out = FUNCTIONS[f.id](self.convert(node.args[0], depth + 1))
        _check_exponents(out, node, self)
        return out


def _describe(node):
    names = {
        "Attribute": "attribute access", "Subscript": "subscript", "Lambda": "lambda",
        "ListComp": "list comprehension", "SetComp": "set comprehension",
        "DictComp": "dict comprehension", "GeneratorExp": "generator expression",
        "JoinedStr": "f-string", "FormattedValue": "f-string", "Compare": "comparison",
        "BoolOp": "boolean operator", "IfExp": "conditional expression", "NamedExpr": "walrus (:=)",
        "Starred": "starred argument", "List": "list", "Tuple": "tuple", "Set": "set",
        "Dict": "dict", "Await": "await", "Yield": "yield", "YieldFrom": "yield", "Slice": "slice",
    }
    kind = type(node).__name__
    what = names.get(kind, f"syntax {kind}")
    if isinstance(node, ast.Attribute):
        what += f" '.{node.attr}'"
    return what


def _check_number(x, node, conv):
    if not (x.is_real and x.is_finite) or abs(x) > MAX_CONSTANT:
        seg = ast.get_source_segment(conv.text, node) or str(x)
        _fail(GEOMETRY_NOT_ALLOWED, "literal_range", seg,
              f"constant {seg} {conv.where(node)} evaluates to {x}: not a finite real number "
              f"of magnitude <= {MAX_CONSTANT:g}")


def _check_exponents(x, node, conv):
    """sympy folds (s**a)**b and s*s*... into one power: keep the folded exponent in range too."""
    for p in x.atoms(sp.Pow):
        if p.exp.is_Number and abs(p.exp) > MAX_EXPONENT:
            seg = ast.get_source_segment(conv.text, node) or str(p)
            _fail(GEOMETRY_NOT_ALLOWED, "exponent", str(p),
                  f"{seg} {conv.where(node)} is the power {p} with exponent {p.exp} after folding; "
                  f"|exponent| <= {MAX_EXPONENT} allowed")


def _check_result(expr):
    bad = [a for a in (sp.zoo, sp.oo, -sp.oo, sp.nan, sp.I) if expr.has(a)]
    if bad:
        _fail(GEOMETRY_NOT_FINITE, "finite", str(expr),
              f"expression {expr} contains {bad[0]} (division by zero, log(0) or a non-real constant)")
    for e in sp.preorder_traversal(expr):
        if (isinstance(e, (sp.Pow, sp.Function)) and not e.free_symbols
                and (e.is_real is False or e.is_finite is False)):
            _fail(GEOMETRY_NOT_FINITE, "finite", str(e),
                  f"constant {e} in the expression is not a finite real number")
    for p in expr.atoms(sp.Pow):
        if p.exp.is_Number and abs(p.exp) > MAX_EXPONENT:
            _fail(GEOMETRY_NOT_ALLOWED, "exponent", str(p),
                  f"power {p} has exponent {p.exp} after folding; |exponent| <= {MAX_EXPONENT} allowed")


# ---------------------------------------------------------------------------- profiles


def _positive_finite(x, what, check):
    try:
        v = float(x)
    except (TypeError, ValueError):
        _fail(GEOMETRY_BAD_PARAMETER, check, x, f"{what} {x!r} is not a number")
    if not math.isfinite(v) or v <= 0.0:
        _fail(GEOMETRY_BAD_PARAMETER, check, v, f"{what} = {v} must be finite and > 0")
    return v


def _abs_as_symbols(expr):
    """Replace every abs(u) (innermost first) by u * A_k with a fresh symbol A_k.

    Returns the new expression and [(A_k, u_k)], so that derivatives can be taken with A_k
    constant and A_k -> sign(u_k) put back afterwards, outermost first.
    """
    back = []

    def walk(e):
        if not e.args:
            return e
        args = [walk(a) for a in e.args]
        if isinstance(e, sp.Abs):
            k = sp.Symbol(f"_abs{len(back)}")   # cannot clash: variables start with a letter
            back.append((k, args[0]))
            return args[0] * k
        return e.func(*args) if any(a is not b for a, b in zip(args, e.args)) else e

    return walk(expr), back


def _derivatives_se(expr, order):
    """[e, e', ..., e^(order)] in symengine, abs(u) differentiated as sign(u) u'."""
    import symengine as se
    g, back = _abs_as_symbols(expr)
    S = se.Symbol(SIGMA.name)        # symengine converts symbols by name (assumptions dropped)
    d = [se.sympify(g)]
    for _ in range(order):
        d.append(d[-1].diff(S))
    for k, u in reversed(back):
        sg = se.sign(se.sympify(u))
        d = [e.subs({se.Symbol(k.name): sg}) for e in d]
    return d


def _critical(expr):
    """Subexpressions u whose zeros make h, h' or h'' singular, with what is required of them.

    (u, "nonzero", why): u must not vanish on [0, L_f] (a denominator; the argument of log; cos
    of the argument of tan; 1 - u^2 for asin/acos; the base of a fractional power p < 2).
    (u, "nonnegative", why): u must not become negative (the base of a fractional power p > 2).
    """
    out, seen = [], set()

    def add(u, need, why):
        if u.has(SIGMA) and (u, need) not in seen:
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


def _hermite_extremes(u, du, ds):
    """Min and max over each interval of the cubic Hermite interpolant of u (values and slopes
    at the grid points): where a smooth u the grid resolves reaches between grid points."""
    u0, u1, d0, d1 = u[:-1], u[1:], ds * du[:-1], ds * du[1:]
    a = 2 * (u0 - u1) + d0 + d1                  # p(t) = a t^3 + b t^2 + c t + d, t in [0, 1]
    b = 3 * (u1 - u0) - 2 * d0 - d1
    c = d0
    lo, hi = np.minimum(u0, u1), np.maximum(u0, u1)
    with np.errstate(all="ignore"):
        disc = b * b - 3 * a * c                  # p'(t) = 3 a t^2 + 2 b t + c
        sq = np.sqrt(np.maximum(disc, 0.0))
        cubic = np.abs(a) > 1e-14 * (np.abs(b) + np.abs(c) + 1e-300)
        roots = [np.where(cubic, (-b + sq) / (3 * a), -c / (2 * b)),
                 np.where(cubic, (-b - sq) / (3 * a), np.nan)]
        for t in roots:
            ok = np.isfinite(t) & (t > 0) & (t < 1) & (disc >= 0)
            pt = ((a * t + b) * t + c) * t + u0
            lo = np.where(ok, np.minimum(lo, pt), lo)
            hi = np.where(ok, np.maximum(hi, pt), hi)
    return lo, hi


@dataclass(frozen=True)
class FenceProfile:
    """A fence as a height profile h(sigma) over the ramp line beyond P (module docstring).

    ``h`` is a sympy expression in SIGMA = Symbol("s", real=True); ``kind`` is "arc" or "curve";
    ``radius`` the arc's R (None for a curve); ``text`` the source text of a curve.
    Build with ``FenceProfile.arc(R)`` or ``FenceProfile.from_text(text)``; check with ``validate``.
    """

    h: sp.Expr
    kind: str
    radius: float | None = None
    text: str | None = None
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def arc(cls, R) -> "FenceProfile":
        """The circular arc of radius R > 0 tangent to the ramp at P, centre C = P + R n:
        h(sigma) = R - sqrt(R^2 - sigma^2) (sigma < R)."""
        R = _positive_finite(R, "fence radius R", "radius")
        f = Fraction(repr(R))         # the same exact rational the parser makes of the literal
        Rs = sp.Rational(f.numerator, f.denominator)
        return cls(Rs - sp.sqrt(Rs ** 2 - SIGMA ** 2), "arc", R, None)

    @classmethod
    def from_text(cls, text) -> "FenceProfile":
        """Parse a height profile h(s) from text (``parse_expression`` with variable s)."""
        return cls(parse_expression(text, ("s",)), "curve", None, text)

    def derivatives(self):
        """(h, h', h'') as sympy expressions in SIGMA (abs(u) differentiates to sign(u) u')."""
        if "d" not in self._cache:
            g, back = _abs_as_symbols(self.h)
            d1 = sp.diff(g, SIGMA)
            d = [self.h, d1, sp.diff(d1, SIGMA)]
            for k, u in reversed(back):
                d = [e.subs(k, sp.sign(u)) for e in d]
            self._cache["d"] = (self.h, d[1], d[2])
        return self._cache["d"]

    def evaluator(self):
        """f(sigma array) -> (h, h', h'') float arrays (nan where not real)."""
        fn, _ = self._numeric()

        def f(sig):
            sig = np.asarray(sig, dtype=float)
            vals = fn(sig.ravel())
            return tuple(vals[:, i].reshape(sig.shape).copy() for i in range(3))
        return f

    def _numeric(self):
        """Compiled h, h', h'' and, for every critical subexpression u, (u, u').

        The trusted sympy tree is converted to symengine, differentiated there and compiled
        with symengine's Lambdify (interpreted backend: about 1 ms in all, against 5-20 ms for
        sympy's diff and lambdify).  abs(u) is differentiated as u sign(u) with sign(u) held
        constant: exact away from u = 0; kinks are found by ``validate``'s smoothness test.
        Returns (fn, critical) with fn(sig 1-d) -> array (len(sig), 3 + 2 len(critical)).
        """
        if "n" not in self._cache:
            import symengine as se
            critical = _critical(self.h)
            try:
                out = _derivatives_se(self.h, 2)
                for u, _, _ in critical:
                    out += _derivatives_se(u, 1)
                S = se.Symbol(SIGMA.name)
                lam = se.Lambdify([S], out, backend="lambda", real=True, cse=True)
            except Exception as e:   # noqa: BLE001 - any conversion failure means unusable geometry
                _fail(GEOMETRY_NOT_FINITE, "evaluate", str(self.h),
                      f"profile {self.h} cannot be evaluated numerically ({type(e).__name__}: {e})")
            n = len(out)

            def fn(sig):
                with np.errstate(all="ignore"):
                    v = lam(np.asarray(sig, dtype=float).reshape(-1, 1))
                return np.asarray(v, dtype=float).reshape(-1, n)
            self._cache["n"] = (fn, critical)
        return self._cache["n"]

    def describe(self):
        return f"arc R={self.radius:g}" if self.kind == "arc" else f"curve h(s) = {self.text.strip()!r}"


def arc_sigma_extent(R, arc_length):
    """sigma_end = R sin(L_arc / R) of an arc of arc length L_arc (< pi/2 R: a height profile)."""
    R = _positive_finite(R, "fence radius R", "radius")
    a = _positive_finite(arc_length, "fence arc length", "length")
    if a / R >= math.pi / 2:
        _fail(GEOMETRY_BAD_PARAMETER, "length", a,
              f"arc length {a:g} turns the arc of radius {R:g} through {a / R:.4g} rad >= pi/2: "
              f"beyond a quarter turn the fence is no height profile over the ramp line; "
              f"use an arc length below {math.pi / 2 * R:.6g}")
    return R * math.sin(a / R)


@dataclass(frozen=True)
class FenceReport:
    """What ``validate`` measured on the grid: sigma extent, arc length of the fence,
    largest |kappa|, largest kappa (towards the disk), largest |h|."""

    length: float
    path_length: float
    max_abs_curvature: float
    max_curvature: float
    max_abs_height: float


def validate(profile: FenceProfile, L_f, *, disk_radius=None, max_curvature=MAX_CURVATURE,
             n_grid=N_GRID) -> FenceReport:
    """Check a fence profile on sigma in [0, L_f]; raise GeometryError naming the failed check.

    Grid: n_grid + 1 uniform points on [0, L_f], spacing ds.
    1. L_f finite and > 0; an arc needs L_f < R (code 7).
    2. h, h', h'' finite and real at every grid point (code 3).
    3. No singular point between grid points (code 3): every subexpression whose zeros make h,
       h' or h'' singular (denominators, log arguments, cos of tan arguments, 1 - u^2 of
       asin/acos, bases of fractional powers p < 2) must keep one sign with its cubic Hermite
       interpolant (from its values and slopes) staying away from 0 by 1e-12 of its size on
       every interval; bases of fractional powers p > 2 must not become negative.
    4. Continuity and tangency with the ramp at P: |h(0)| <= 1e-9 and |h'(0)| <= 1e-9 (code 4).
    5. C1, no jump or kink between grid points (code 5), on every interval:
       |dh - (trapezoid of h' - ds^2/12 dh'')| <= 1e-3 (|dh| + ds max|h'|) + ds^2 max|h''| + floor,
       |dh' - trapezoid of h''| <= 1e-3 |dh'| + ds max|h''| + floor
       (max over the interval's ends, floor = 1e-10 (max|f| + L_f max|f'|) over the grid).
       The allowances admit a jump of the curvature inside an interval (the arc meets the ramp
       with one at P), so a kink is caught when its angle exceeds about ds max|h''|.
    6. Curvature kappa = h''/(1+h'^2)^(3/2) at the grid points (code 6): |kappa| <= max_curvature
       (default 1e3 per length unit: radius of curvature >= 1 mm in metres), and if disk_radius
       r is given, kappa r < 1 where the fence bends towards the disk (a disk of radius r
       follows a concave fence only where its radius of curvature exceeds r: the arc needs
       R > r).
    Returns a FenceReport.
    """
    L = _positive_finite(L_f, "fence length L_f", "length")
    if profile.kind == "arc" and L >= profile.radius:
        _fail(GEOMETRY_BAD_PARAMETER, "length", L,
              f"fence length along the ramp L_f = {L:g} must be below the arc radius R = "
              f"{profile.radius:g} (the arc turns through a quarter turn at sigma = R)")
    if disk_radius is not None:
        _positive_finite(disk_radius, "disk radius r", "disk_radius")
    mc = _positive_finite(max_curvature, "curvature limit", "max_curvature")
    n_grid = int(n_grid)
    sig = np.linspace(0.0, L, n_grid + 1)
    ds = sig[1] - sig[0]
    fn, critical = profile._numeric()
    vals = fn(sig)
    h, h1, h2 = vals[:, 0], vals[:, 1], vals[:, 2]
    where = f"{profile.describe()} on [0, {L:g}]"
    for name, v in (("h", h), ("h'", h1), ("h''", h2)):
        bad = ~np.isfinite(v)
        if bad.any():
            i = int(np.argmax(bad))
            _fail(GEOMETRY_NOT_FINITE, "finite", float(sig[i]),
                  f"{where}: {name}(s) is not finite or not real at s = {sig[i]:.6g} "
                  f"({name} = {v[i]})")
    for k, (u, need, why) in enumerate(critical):
        uu, du = vals[:, 3 + 2 * k], vals[:, 4 + 2 * k]
        lo, hi = _hermite_extremes(uu, du, ds)
        size = np.max(np.abs(uu))
        if need == "nonzero":
            bad = (lo <= 1e-12 * size) & (hi >= -1e-12 * size)
        else:
            bad = lo < -1e-12 * size
        bad |= ~(np.isfinite(lo) & np.isfinite(hi))
        if bad.any():
            i = int(np.argmax(bad))
            what = "vanishes" if need == "nonzero" else "becomes negative"
            _fail(GEOMETRY_NOT_FINITE, "singular", float(sig[i]),
                  f"{where}: the {why} {what} between s = {sig[i]:.6g} and {sig[i + 1]:.6g}, "
                  f"where h, h' or h'' is then not finite or not real")
    if abs(h[0]) > CONTINUITY_TOL:
        _fail(GEOMETRY_NOT_TANGENT, "continuity", float(h[0]),
              f"{where}: h(0) = {h[0]:.6g}; the fence must start on the ramp at P, "
              f"|h(0)| <= {CONTINUITY_TOL:g}")
    if abs(h1[0]) > CONTINUITY_TOL:
        _fail(GEOMETRY_NOT_TANGENT, "tangency", float(h1[0]),
              f"{where}: h'(0) = {h1[0]:.6g}; the fence must start tangent to the ramp at P "
              f"(it has a kink there), |h'(0)| <= {CONTINUITY_TOL:g}")
    a1, a2 = np.abs(h1), np.abs(h2)
    m1, m2 = np.maximum(a1[1:], a1[:-1]), np.maximum(a2[1:], a2[:-1])
    dh, dh1 = np.diff(h), np.diff(h1)
    tests = (("h", dh, 0.5 * ds * (h1[1:] + h1[:-1]) - ds ** 2 / 12.0 * np.diff(h2),
              SMOOTH_RTOL * (np.abs(dh) + ds * m1) + ds ** 2 * m2
              + 1e-10 * (np.max(np.abs(h)) + L * np.max(a1))),
             ("h'", dh1, 0.5 * ds * (h2[1:] + h2[:-1]),
              SMOOTH_RTOL * np.abs(dh1) + ds * m2 + 1e-10 * (np.max(a1) + L * np.max(a2))))
    for name, change, quad, tol in tests:
        bad = np.abs(change - quad) > tol
        if bad.any():
            i = int(np.argmax(bad))
            _fail(GEOMETRY_NOT_SMOOTH, "smooth", float(sig[i]),
                  f"{where}: the profile is not smooth between s = {sig[i]:.6g} and "
                  f"{sig[i + 1]:.6g}: {name} changes by {change[i]:.6g} while its derivative "
                  f"integrates to {quad[i]:.6g} (a jump or a kink, or a variation faster than the "
                  f"check grid of {n_grid} intervals resolves); the fence must be smooth (C1)")
    kappa = h2 / (1.0 + h1 ** 2) ** 1.5
    i = int(np.argmax(np.abs(kappa)))
    if abs(kappa[i]) > mc:
        _fail(GEOMETRY_CURVATURE, "curvature", float(kappa[i]),
              f"{where}: curvature {kappa[i]:.6g} at s = {sig[i]:.6g} exceeds the limit {mc:g} "
              f"(radius of curvature below {1 / mc:g})")
    if disk_radius is not None:
        r = float(disk_radius)
        j = int(np.argmax(kappa))
        if kappa[j] * r >= 1.0:
            _fail(GEOMETRY_CURVATURE, "curvature", float(kappa[j]),
                  f"{where}: curvature {kappa[j]:.6g} at s = {sig[j]:.6g} bends the fence towards "
                  f"the disk with radius {1 / kappa[j]:.6g} <= disk radius {r:g}; the disk cannot "
                  f"follow it (the arc needs R > r)")
    w = np.sqrt(1.0 + h1 ** 2)
    return FenceReport(L, float(0.5 * ds * np.sum(w[1:] + w[:-1])), float(np.max(np.abs(kappa))),
                       float(np.max(kappa)), float(np.max(np.abs(h))))


# ---------------------------------------------------------------------------- plane curve


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
    fence: T = (t + h' n)/w, N = (n - h' t)/w, w = sqrt(1 + h'^2)."""
    (tx, ty), (nx, ny) = ramp_frame(phi)
    h1 = sp.diff(profile.h, SIGMA)
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
