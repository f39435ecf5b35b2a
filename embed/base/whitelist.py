"""The whitelist of a real expression from outside (``embed.base.expression``): what is
allowed (names, functions, operators, the size limits), the error every rejection raises, and
the conversion of a parsed tree, node by node, into a sympy tree built by hand (``_Converter``):
sympy's automatic simplification is kept away from complex constants, Floats and re-evaluation
of nested functions."""

from __future__ import annotations

import ast
import math
import re
from fractions import Fraction

import sympy as sp

from .errors import ExpressionError, InputError  # noqa: F401 - ExpressionError: named here too
# codes of the rejections (defined in errors: read without sympy)
from .errors import NOT_ALLOWED, NOT_FINITE, SYNTAX

MAX_LENGTH = 400            # characters of text
MAX_DEPTH = 32              # nesting (parentheses; AST depth with +- and */ chains flattened)
MAX_NODES = 256             # AST nodes
MAX_LITERAL = 1e6           # |numeric literal|
MAX_EXPONENT = 10           # |exponent|, also after sympy folds powers of powers: (s**2)**6 = s**12
MAX_CONSTANT = 1e300        # |value| of any constant subexpression

CONSTANTS = {"pi": sp.pi, "E": sp.E}
FUNCTIONS = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt,
    "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh, "asin": sp.asin, "acos": sp.acos,
    "atan": sp.atan, "abs": sp.Abs,
}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
           ast.Mod: "%", ast.FloorDiv: "//", ast.MatMult: "@", ast.BitXor: "^", ast.BitOr: "|",
           ast.BitAnd: "&", ast.LShift: "<<", ast.RShift: ">>"}




def symbol(name: str = "s") -> sp.Symbol:
    """The sympy symbol ``parse_expression`` makes for a variable name (real)."""
    return sp.Symbol(name, real=True)


_ALLOWED_TEXT = (f"numbers, the variable(s) {{vars}}, pi, E, + - * / ** with a numeric exponent "
                 f"|e| <= {MAX_EXPONENT}, and one-argument functions {', '.join(FUNCTIONS)}")


def _fail(code, check, value, message):
    raise ExpressionError(message, code=code, check=check, value=value)


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
            _fail(NOT_FINITE, "finite", self.seg(node),
                  f"constant {self.seg(node)} {self.where(node)} is {v}: not a finite real number "
                  f"of magnitude <= {MAX_CONSTANT:g}")
        return float(v)

    def convert(self, node, depth):
        if depth > MAX_DEPTH:
            _fail(SYNTAX, "depth", depth,
                  f"expression nested deeper than {MAX_DEPTH} {self.where(node)}")
        if isinstance(node, ast.Constant):
            x = self.literal(node)
            return x, float(x)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.UAdd, ast.USub)):
                op = {ast.Not: "not", ast.Invert: "~"}.get(type(node.op), type(node.op).__name__)
                _fail(NOT_ALLOWED, "operator", op,
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
        _fail(NOT_ALLOWED, "construct", what,
              f"{what} {self.where(node)} is not allowed; use {self.allowed}")

    def literal(self, node):
        v = node.value
        if type(v) not in (int, float):     # bool is an int subclass: excluded here
            what = "string" if isinstance(v, (str, bytes)) else f"{type(v).__name__} literal"
            _fail(NOT_ALLOWED, "literal", repr(v),
                  f"{what} {v!r} {self.where(node)} is not allowed; only real numbers")
        seg = ast.get_source_segment(self.text, node) or repr(v)
        if isinstance(v, float) and not math.isfinite(v):
            _fail(NOT_ALLOWED, "literal_range", seg,
                  f"number {seg} {self.where(node)} is not finite; |number| <= {MAX_LITERAL:g} allowed")
        if abs(v) > MAX_LITERAL:
            _fail(NOT_ALLOWED, "literal_range", seg,
                  f"number {seg} {self.where(node)} is out of range; "
                  f"|number| <= {MAX_LITERAL:g} allowed")
        if isinstance(v, float):
            if v == 0.0 and re.search(r"[1-9]", re.split(r"[eE]", seg)[0]):
                _fail(NOT_ALLOWED, "literal_range", seg,
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
            _fail(NOT_ALLOWED, "name", n,
                  f"function {n!r} {self.where(node)} must be called with one argument, e.g. {n}(s)")
        _fail(NOT_ALLOWED, "name", n,
              f"unknown name {n!r} {self.where(node)}; allowed names: "
              f"{', '.join(list(self.symbols) + list(CONSTANTS))}; use {self.allowed}")

    def binop(self, node, depth):
        op = type(node.op)
        if op not in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow):
            sym = _BINOPS.get(op, op.__name__)
            hint = "; write powers as **" if sym == "^" else ""
            _fail(NOT_ALLOWED, "operator", sym,
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
                _fail(NOT_FINITE, "finite", self.seg(right),
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
                _fail(NOT_FINITE, "finite", self.seg(node),
                      f"division by zero ({self.seg(node)} {self.where(node)}: 0 to a negative power)")
            if bval != 0 and abs(float(e)) * abs(math.log10(abs(bval))) > 300:
                _fail(NOT_ALLOWED, "literal_range", self.seg(node),
                      f"constant {self.seg(node)} {self.where(node)} is out of range "
                      f"(above {MAX_CONSTANT:g})")
            if bval < 0 and not e.is_Integer:
                _fail(NOT_FINITE, "finite", self.seg(node),
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
                _fail(SYNTAX, "depth", depth, f"exponent nested deeper than {MAX_DEPTH}")
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
                    _fail(NOT_ALLOWED, "exponent", seg,
                          f"exponent {seg} {self.where(n)} divides by zero")
                return a / b
            return None

        e = number(node, True)
        if e is None:
            seg = ast.get_source_segment(self.text, node)
            _fail(NOT_ALLOWED, "exponent", seg,
                  f"exponent {seg!r} {self.where(node)} is not allowed: an exponent must be a number "
                  f"or a fraction of two numbers with |exponent| <= {MAX_EXPONENT} "
                  f"(use exp(x) for E**x)")
        if abs(e) > MAX_EXPONENT:
            _fail(NOT_ALLOWED, "exponent", str(e),
                  f"exponent {e} {self.where(node)} is out of range; "
                  f"|exponent| <= {MAX_EXPONENT} allowed")
        return e

    def call(self, node, depth):
        f = node.func
        if not isinstance(f, ast.Name):
            what = _describe(f)
            _fail(NOT_ALLOWED, "call", what,
                  f"calling {what} {self.where(node)} is not allowed; "
                  f"functions: {', '.join(FUNCTIONS)}")
        if f.id not in FUNCTIONS:
            _fail(NOT_ALLOWED, "function", f.id,
                  f"unknown function {f.id!r} {self.where(node)}; allowed functions: "
                  f"{', '.join(FUNCTIONS)}")
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            _fail(NOT_ALLOWED, "arguments", f.id,
                  f"function {f.id!r} {self.where(node)} takes exactly one positional argument")
        arg, aval = self.convert(node.args[0], depth + 1)
        if aval is not None:                 # a function of a constant: its float, checked
            try:
                v = _MATH[f.id](aval)
            except (ValueError, OverflowError) as e:
                _fail(NOT_FINITE, "finite", self.seg(node),
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
            _fail(NOT_ALLOWED, "exponent", str(p),
                  f"{seg} {conv.where(node)} is the power {p} with exponent {p.exp} after folding; "
                  f"|exponent| <= {MAX_EXPONENT} allowed")
