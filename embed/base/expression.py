"""A real expression from outside (an FMU string input, say), parsed through a whitelist.

The text is parsed with ``ast.parse(mode="eval")`` and converted node by node through a
whitelist into a sympy tree built by hand; eval, exec, compile, sympify and parse_expr never see
the text.  Size limits (characters, nesting, nodes, literals, exponents, constants) bound the
work; sympy's automatic simplification is kept away from complex constants, Floats and
re-evaluation of nested functions, each of which took minutes on inputs found by fuzzing
(the parse time on random whitelisted expressions: docs/design.md, facts).  sympy remains a large dependency: parse where the work can be stopped (a worker process, with
a time limit).

Every rejection is an ``ExpressionError`` with a ``code`` (``SYNTAX``, ``NOT_ALLOWED``,
``NOT_FINITE``), the name of the ``check`` and the offending ``value``.  Nothing here knows
what the expression describes: the run-time fence of the disk_fence scenario
(``scenarios/disk_fence/profile.py``) is one user.  See docs/design.md (layers).
"""

from __future__ import annotations

import ast
import keyword
import re

import sympy as sp

from .whitelist import (CONSTANTS, FUNCTIONS, MAX_DEPTH, MAX_EXPONENT, MAX_LENGTH, MAX_NODES,
                        NOT_ALLOWED, NOT_FINITE, SYNTAX, ExpressionError, _ALLOWED_TEXT,
                        _Converter, _fail, symbol)

__all__ = ["ExpressionError", "parse_expression", "symbol", "SYNTAX", "NOT_ALLOWED",
           "NOT_FINITE"]

_CHAR_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ \t+-*/().")
_CHAR_HINT = {"^": "write powers as **", "'": "strings are not allowed", '"': "strings are not allowed",
              ",": "functions take exactly one argument", "\n": "write the expression on one line"}


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
    Raises ExpressionError naming the offending token and what is allowed.
    """
    for v in variables:
        if (not isinstance(v, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", v)
                or keyword.iskeyword(v) or v in FUNCTIONS or v in CONSTANTS):
            raise ValueError(f"variable name {v!r} must be a plain identifier other than a "
                             f"keyword, a function or a constant name")
    allowed = _ALLOWED_TEXT.format(vars=", ".join(variables))
    if not isinstance(text, str):
        _fail(SYNTAX, "type", type(text).__name__,
              f"expression must be a string, got {type(text).__name__}")
    if len(text) > max_length:
        _fail(SYNTAX, "length", len(text),
              f"expression has {len(text)} characters; at most {max_length} are allowed")
    for i, c in enumerate(text):
        if c not in _CHAR_OK:
            hint = _CHAR_HINT.get(c, "allowed are ASCII letters, digits, spaces, _ + - * / ( ) and .")
            _fail(SYNTAX, "character", c,
                  f"character {c!r} (U+{ord(c):04X}) at position {i} is not allowed: {hint}")
    text = text.strip()
    if not text:
        _fail(SYNTAX, "empty", "", f"expression is empty; write {allowed}")
    depth = 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth > MAX_DEPTH:
            _fail(SYNTAX, "depth", depth,
                  f"parentheses nested deeper than {MAX_DEPTH} at position {i}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        _fail(SYNTAX, "syntax", text,
              f"expression does not parse ({e.msg} at column {e.offset}); write {allowed}")
    except (ValueError, MemoryError, RecursionError) as e:    # pragma: no cover - guarded above
        _fail(SYNTAX, "syntax", text, f"expression does not parse ({type(e).__name__})")
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_NODES:
        _fail(SYNTAX, "size", nodes,
              f"expression has {nodes} syntax nodes; at most {MAX_NODES} are allowed")
    expr, _ = _Converter(text, tuple(variables), allowed).convert(tree.body, 0)
    _check_result(expr)
    return expr


def _check_result(expr):
    bad = [a for a in (sp.zoo, sp.oo, -sp.oo, sp.nan, sp.I) if expr.has(a)]
    if bad:
        _fail(NOT_FINITE, "finite", str(expr),
              f"expression {expr} contains {bad[0]} (division by zero, log(0) or a non-real constant)")
    for e in sp.preorder_traversal(expr):
        if (isinstance(e, (sp.Pow, sp.Function)) and not e.free_symbols
                and (e.is_real is False or e.is_finite is False)):
            _fail(NOT_FINITE, "finite", str(e),
                  f"constant {e} in the expression is not a finite real number")
    for p in expr.atoms(sp.Pow):
        if p.exp.is_Number and abs(p.exp) > MAX_EXPONENT:
            _fail(NOT_ALLOWED, "exponent", str(p),
                  f"power {p} has exponent {p.exp} after folding; |exponent| <= {MAX_EXPONENT} allowed")
