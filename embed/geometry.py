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
the text.  Numeric checks convert that trusted tree to symengine and evaluate it with symengine's
interpreted Lambdify (no Python code is generated).  Size limits (characters, nesting, nodes,
literals, exponents, constants) bound the work; sympy's automatic simplification is kept away
from complex constants, Floats and re-evaluation of nested functions, each of which took minutes
on inputs found by fuzzing.  Parse plus validate stayed below 0.2 s (median about 0.6 ms) on
12,000 random whitelisted expressions, a few ms for ordinary profiles, ~10 us to check an arc.
sympy remains a large dependency: run parse and validate where they can be stopped (the worker
process) with a time limit, see GEOMETRY_TIMEOUT.
Every rejection is a ``GeometryError`` with a ``code`` for the FMU's geometry_status output
(``GEOMETRY_*`` below), the name of the ``check`` and the offending ``value``.
"""

from __future__ import annotations

import ast
import contextlib
import keyword
import math
import re
import signal
import threading
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import symengine as se
import sympy as sp

from .errors import InputError
from .model import to_symengine

# geometry_status codes (the FMU output); 0 = the geometry in use is good
GEOMETRY_OK = 0
GEOMETRY_SYNTAX = 1         # empty, bad characters, too long/deep/large, does not parse
GEOMETRY_NOT_ALLOWED = 2    # a name, function, operator, construct, literal or exponent
                            # outside the whitelist
GEOMETRY_NOT_FINITE = 3     # h, h' or h'' not finite or not real somewhere on [0, L_f]
GEOMETRY_NOT_TANGENT = 4    # h(0) != 0 or h'(0) != 0: not continuous/tangent with the ramp at P
GEOMETRY_NOT_SMOOTH = 5     # a kink: h' jumps where the argument of an abs changes sign
GEOMETRY_CURVATURE = 6      # curvature above the limit
GEOMETRY_BAD_PARAMETER = 7  # radius or length NaN, infinite, <= 0; arc longer than a quarter turn
GEOMETRY_TIMEOUT = 8        # the checks did not finish within CHECK_TIME_LIMIT (time_limit)
CHECK_TIME_LIMIT = None     # s; set in the background worker's process, where a timer
                            # signal may be used (never in a master's process)



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


MAX_LENGTH = 400            # characters of text
MAX_DEPTH = 32              # nesting (parentheses; AST depth with +- and */ chains flattened)
MAX_NODES = 256             # AST nodes
MAX_LITERAL = 1e6           # |numeric literal|
MAX_EXPONENT = 10           # |exponent|, also after sympy folds powers of powers: (s**2)**6 = s**12
MAX_CONSTANT = 1e300        # |value| of any constant subexpression
CONTINUITY_TOL = 1e-9       # |h(0)| (length units) and |h'(0)| at P
MAX_CURVATURE = 1e3         # default |kappa| limit (1/length): radius of curvature >= 1 mm in metres
N_GRID = 4000               # intervals of the check grid on [0, L_f]

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

    Allowed: int/float literals (finite, |v| <= 1e6; decimals become exact rationals, 0.1 ->
    1/10), the variables (``symbol(name)``: real sympy symbols), pi, E, unary + -, binary
    + - * /, ``**`` with an exponent that is a numeric literal or a fraction of two, optionally
    signed (|e| <= 10, also after sympy folds (s**2)**6 into s**12), and calls of one positional
    argument to sin cos tan exp log sqrt sinh cosh tanh asin acos atan abs (abs -> sympy.Abs).
    Nothing else.  Limits: max_length characters, nesting depth 32, 256 syntax nodes.
    Constant subexpressions must be finite and real (|value| <= 1e300); a function of a constant
    becomes the exact Rational of its double value (sin(1) -> 7579296827247065/9007199254740992),
    the rest stays exact (no sympy Float anywhere).
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
    expr, _ = _Converter(text, tuple(variables), allowed).convert(tree.body, 0)
    _check_result(expr)
    return expr


_MATH = {"sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp, "log": math.log,
         "sqrt": math.sqrt, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
         "asin": math.asin, "acos": math.acos, "atan": math.atan, "abs": abs}


def _as_rational(v: float) -> sp.Rational:
    """The exact value of a double as a sympy Rational.  Not a Float: sympy's automatic
    simplification of powers of products holding Floats can run for minutes (a gcd over a real
    field), found by fuzzing: ((sqrt((1.57*s)**(3/2))*exp(atan(-0.237)))**(1/2)."""
    n, d = float(v).as_integer_ratio()
    return sp.Rational(n, d)


class _Converter:
    """Whitelisted ast -> sympy, building every node by hand.

    ``convert`` returns (sympy expression, value) where value is the float of a subtree without
    variables (None otherwise).  Constant subtrees are checked on that value (finite, real,
    |value| <= 1e300) as they are built, and a function of a constant becomes the value
    (an exact Rational of the double): sympy never evaluates functions of (possibly
    complex) constants, whose automatic simplification can take minutes (acos(25) inside abs
    and log, found by fuzzing).
    """

    def __init__(self, text, variables, allowed):
        self.text, self.allowed = text, allowed
        self.symbols = {v: symbol(v) for v in variables}

    def where(self, node):
        return f"at column {getattr(node, 'col_offset', 0) + 1}"

    def seg(self, node):
        return ast.get_source_segment(self.text, node) or type(node).__name__

    def value(self, v, node):
        """Check the value of a constant subtree."""
        if isinstance(v, complex) or not math.isfinite(v) or abs(v) > MAX_CONSTANT:
            _fail(GEOMETRY_NOT_FINITE, "finite", self.seg(node),
                  f"constant {self.seg(node)} {self.where(node)} is {v}: not a finite real number "
                  f"of magnitude <= {MAX_CONSTANT:g}")
        return float(v)

    def convert(self, node, depth):
        if depth > MAX_DEPTH:
            _fail(GEOMETRY_SYNTAX, "depth", depth,
                  f"expression nested deeper than {MAX_DEPTH} {self.where(node)}")
        if isinstance(node, ast.Constant):
            x = self.literal(node)
            return x, float(x)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.UAdd, ast.USub)):
                op = {ast.Not: "not", ast.Invert: "~"}.get(type(node.op), type(node.op).__name__)
                _fail(GEOMETRY_NOT_ALLOWED, "operator", op,
                      f"operator {op!r} {self.where(node)} is not allowed; use {self.allowed}")
            x, v = self.convert(node.operand, depth + 1)
            if isinstance(node.op, ast.USub):
                return sp.Mul(sp.Integer(-1), x), (None if v is None else -v)
            return x, v
        if isinstance(node, ast.BinOp):
            return self.binop(node, depth)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        what = _describe(node)
        _fail(GEOMETRY_NOT_ALLOWED, "construct", what,
              f"{what} {self.where(node)} is not allowed; use {self.allowed}")

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
                  f"number {seg} {self.where(node)} is out of range; "
                  f"|number| <= {MAX_LITERAL:g} allowed")
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
            return self.symbols[n], None
        if n in CONSTANTS:
            return CONSTANTS[n], float(CONSTANTS[n])
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
        top = node
        while isinstance(node, ast.BinOp) and type(node.op) in group:
            chain.append((type(node.op), node.right))
            node = node.left
        out, val = self.convert(node, depth + 1)
        for kind, right in reversed(chain):
            x, v = self.convert(right, depth + 1)
            if kind is ast.Div and v == 0:
                _fail(GEOMETRY_NOT_FINITE, "finite", self.seg(right),
                      f"division by zero ({self.seg(right)} {self.where(right)} is 0)")
            if val is not None and v is not None:
                val = {ast.Add: val + v, ast.Sub: val - v, ast.Mult: val * v,
                       ast.Div: val / v if v else 0.0}[kind]
                val = self.value(val, top)
            else:
                val = None
            if kind is ast.Add:
                out = sp.Add(out, x)
            elif kind is ast.Sub:
                out = sp.Add(out, sp.Mul(sp.Integer(-1), x))
            elif kind is ast.Mult:
                out = sp.Mul(out, x)
            else:
                out = sp.Mul(out, sp.Pow(x, sp.Integer(-1)))
        return out, val

    def power(self, node, depth):
        e = self.exponent(node.right)
        base, bval = self.convert(node.left, depth + 1)
        val = None
        if bval is not None:
            if bval == 0 and e < 0:
                _fail(GEOMETRY_NOT_FINITE, "finite", self.seg(node),
                      f"division by zero ({self.seg(node)} {self.where(node)}: 0 to a negative power)")
            if bval != 0 and abs(float(e)) * abs(math.log10(abs(bval))) > 300:
                _fail(GEOMETRY_NOT_ALLOWED, "literal_range", self.seg(node),
                      f"constant {self.seg(node)} {self.where(node)} is out of range "
                      f"(above {MAX_CONSTANT:g})")
            if bval < 0 and not e.is_Integer:
                _fail(GEOMETRY_NOT_FINITE, "finite", self.seg(node),
                      f"constant {self.seg(node)} {self.where(node)} is not real "
                      f"(a fractional power of {bval:g})")
            val = self.value(bval ** float(e), node)
        out = sp.Pow(base, e)
        if val is not None and out.has(sp.Function):
            out = _as_rational(val)
        _check_exponents(out, node, self)
        return out, val


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
                  f"or a fraction of two numbers with |exponent| <= {MAX_EXPONENT} "
                  f"(use exp(x) for E**x)")
        if abs(e) > MAX_EXPONENT:
            _fail(GEOMETRY_NOT_ALLOWED, "exponent", str(e),
                  f"exponent {e} {self.where(node)} is out of range; "
                  f"|exponent| <= {MAX_EXPONENT} allowed")
        return e

    def call(self, node, depth):
        f = node.func
        if not isinstance(f, ast.Name):
            what = _describe(f)
            _fail(GEOMETRY_NOT_ALLOWED, "call", what,
                  f"calling {what} {self.where(node)} is not allowed; "
                  f"functions: {', '.join(FUNCTIONS)}")
        if f.id not in FUNCTIONS:
            _fail(GEOMETRY_NOT_ALLOWED, "function", f.id,
                  f"unknown function {f.id!r} {self.where(node)}; allowed functions: "
                  f"{', '.join(FUNCTIONS)}")
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            _fail(GEOMETRY_NOT_ALLOWED, "arguments", f.id,
                  f"function {f.id!r} {self.where(node)} takes exactly one positional argument")
        arg, aval = self.convert(node.args[0], depth + 1)
        if aval is not None:                 # a function of a constant: its float, checked
            try:
                v = _MATH[f.id](aval)
            except (ValueError, OverflowError) as e:
                _fail(GEOMETRY_NOT_FINITE, "finite", self.seg(node),
                      f"constant {self.seg(node)} {self.where(node)} = {f.id}({aval:g}) is not a "
                      f"finite real number ({e})")
            v = self.value(v, node)
            return _as_rational(v), v
        out = FUNCTIONS[f.id](arg)
        _check_exponents(out, node, self)
        return out, None


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


def _hermite(u, du, ds):
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
    """Compiled numerics of a profile: symengine Lambdify (interpreted backend, with CSE), about
    1 ms to build for ordinary profiles against 5-20 ms for sympy's diff and lambdify.

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
        S = se.Symbol(SIGMA.name)        # symengine converts symbols by name (assumptions dropped)
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
            _fail(GEOMETRY_NOT_FINITE, "evaluate", str(h),
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


def _exact(x: float) -> sp.Rational:
    """The exact rational the parser makes of the literal repr(x)."""
    f = Fraction(repr(float(x)))
    return sp.Rational(f.numerator, f.denominator)


@dataclass(frozen=True)
class FenceProfile:
    """A fence as a height profile h(sigma) over the ramp line beyond P (module docstring).

    ``h`` is a sympy expression in SIGMA = Symbol("s", real=True); ``kind`` is "arc" or "curve";
    ``radius`` the arc's R (None for a curve); ``text`` the source text of a curve.
    Build with ``FenceProfile.arc(R)`` or ``FenceProfile.from_text(text)``; check with ``validate``.
    Pickles as (h, kind, radius, text); compiled numerics are rebuilt on demand.
    """

    h: sp.Expr
    kind: str
    radius: float | None = None
    text: str | None = None
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __reduce__(self):
        return (FenceProfile, (self.h, self.kind, self.radius, self.text))

    @classmethod
    def arc(cls, R) -> "FenceProfile":
        """The circular arc of radius R > 0 tangent to the ramp at P, centre C = P + R n:
        h(sigma) = R - sqrt(R^2 - sigma^2), written sigma^2 / (R + sqrt(R^2 - sigma^2)) so that
        no digits cancel for large R (sigma < R)."""
        R = _positive_finite(R, "fence radius R", "radius")
        Rs = _exact(R)
        return cls(SIGMA ** 2 / (Rs + sp.sqrt(Rs ** 2 - SIGMA ** 2)), "arc", R, None)

    @classmethod
    def from_text(cls, text) -> "FenceProfile":
        """Parse a height profile h(s) from text (``parse_expression`` with variable s)."""
        return cls(parse_expression(text, ("s",)), "curve", None, text)

    def derivatives(self):
        """(h, h', h'') as sympy expressions in SIGMA (abs(u) differentiates to sign(u) u', and to
        u' for u a fractional power, positive wherever it is real).
        For the arc in closed form: h' = sigma/sqrt(R^2 - sigma^2), h'' = R^2/(R^2 - sigma^2)^(3/2)."""
        if "d" not in self._cache and self.kind == "arc" and self.radius is not None:
            R = _exact(self.radius)
            root = sp.sqrt(R ** 2 - SIGMA ** 2)
            self._cache["d"] = (self.h, SIGMA / root, R ** 2 / root ** 3)
        if "d" not in self._cache:
            g, back = _abs_as_symbols(self.h)
            d1 = sp.diff(g, SIGMA)
            d = [d1, sp.diff(d1, SIGMA)]
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
        S = se.Symbol(SIGMA.name)
        try:
            d = [to_symengine(g)]
            for _ in range(3):
                d.append(d[-1].diff(S))
            for k, u, _ in reversed(back):
                sg = to_symengine(_branch_sign(u))
                d = [e.subs({se.Symbol(k.name): sg}) for e in d]
        except Exception as e:   # noqa: BLE001 - any conversion failure means unusable geometry
            _fail(GEOMETRY_NOT_FINITE, "evaluate", str(self.h),
                  f"profile {self.h} cannot be differentiated ({type(e).__name__}: {e})")
        return d

    def evaluator(self):
        """f(sigma array) -> (h, h', h'') float arrays (nan where not real; at a zero of an abs
        argument, sign(0) = 0 is used)."""
        num = self._numeric()

        def f(sig):
            sig = np.asarray(sig, dtype=float)
            vals = num.grid(sig.ravel())
            return tuple(vals[:, i].reshape(sig.shape).copy() for i in range(3))
        return f

    def _numeric(self) -> _Numeric:
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
    An arc (``FenceProfile.arc``) is checked in closed form (kappa = 1/R, no grid: ~10 us).
    Returns a FenceReport.
    """
    with np.errstate(all="ignore"):
        return _validate(profile, L_f, disk_radius, max_curvature, n_grid)


def _validate(profile, L_f, disk_radius, max_curvature, n_grid):
    L = _positive_finite(L_f, "fence length L_f", "length")
    if profile.kind == "arc" and L >= profile.radius:
        _fail(GEOMETRY_BAD_PARAMETER, "length", L,
              f"fence length along the ramp L_f = {L:g} must be below the arc radius R = "
              f"{profile.radius:g} (the arc turns through a quarter turn at sigma = R)")
    if disk_radius is not None:
        _positive_finite(disk_radius, "disk radius r", "disk_radius")
    mc = _positive_finite(max_curvature, "curvature limit", "max_curvature")
    if profile.kind == "arc" and profile.radius is not None:
        return _validate_arc(profile, L, disk_radius, mc)
    n_grid = int(n_grid)
    sig = np.linspace(0.0, L, n_grid + 1)
    ds = sig[1] - sig[0]
    num = profile._numeric()
    vals = num.grid(sig)
    h, h1, h2 = vals[:, 0], vals[:, 1], vals[:, 2]
    where = f"{profile.describe()} on [0, {L:g}]"
    for name, v in (("h", h), ("h'", h1), ("h''", h2)):
        bad = ~np.isfinite(v)
        if bad.any():
            i = int(np.argmax(bad))
            _fail(GEOMETRY_NOT_FINITE, "finite", float(sig[i]),
                  f"{where}: {name}(s) is not finite or not real at s = {sig[i]:.6g} "
                  f"({name} = {v[i]})")
    for k, (u, need, why) in enumerate(num.critical):
        uu, du = vals[:, 3 + 2 * k], vals[:, 4 + 2 * k]
        _, (lo, _), (hi, _) = _hermite(uu, du, ds)
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
    slope0 = h1[0]
    if num.abs_args:                               # h'(0+): every abs on its branch just past 0
        AR, _ = _branch_signs(num, vals[:1], +1.0)
        slope0 = num.slope(np.column_stack([[0.0], AR]))[0]
    if not abs(slope0) <= CONTINUITY_TOL:
        _fail(GEOMETRY_NOT_TANGENT, "tangency", float(slope0),
              f"{where}: h'(0) = {slope0:.6g}; the fence must start tangent to the ramp at P "
              f"(it has a kink there), |h'(0)| <= {CONTINUITY_TOL:g}")
    _check_kinks(num, vals, sig, ds, where)
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


def _validate_arc(profile, L, disk_radius, mc):
    """The arc in closed form (same checks, same messages): kappa = 1/R everywhere."""
    R = profile.radius
    where = f"{profile.describe()} on [0, {L:g}]"
    if 1.0 / R > mc:
        _fail(GEOMETRY_CURVATURE, "curvature", 1.0 / R,
              f"{where}: curvature {1 / R:.6g} at s = 0 exceeds the limit {mc:g} "
              f"(radius of curvature below {1 / mc:g})")
    if disk_radius is not None and float(disk_radius) / R >= 1.0:
        _fail(GEOMETRY_CURVATURE, "curvature", 1.0 / R,
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
        (a, b, c, u0), (lo, tlo), (hi, thi) = _hermite(u, du, ds)
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
            _fail(GEOMETRY_NOT_SMOOTH, "smooth", len(xs),
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
        _fail(GEOMETRY_NOT_SMOOTH, "smooth", float(x[i]),
              f"{where}: the fence has a kink at s = {x[i]:.9g}, where abs({num.abs_args[ks[i]]}) "
              f"turns: its slope jumps by {right[i] - left[i]:.3g} (from {left[i]:.9g} to "
              f"{right[i]:.9g}); the fence must be "
              f"smooth (C1)")


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
    fence: T = (t + h' n)/w, N = (n - h' t)/w, w = sqrt(1 + h'^2) (h' from
    ``profile.derivatives()``: sign(u) u' for abs(u))."""
    (tx, ty), (nx, ny) = ramp_frame(phi)
    if profile.kind == "arc" and profile.radius is not None:   # closed form: w = R/sqrt(R^2 - s^2)
        R = _exact(profile.radius)
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
