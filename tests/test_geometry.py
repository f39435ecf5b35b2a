"""Fence geometry from outside (issue 4; gillespie2005 Example 2, Sec 6.2, Fig 8): the whitelist
parser, the checks on a fence profile, and the arc against the circle and the paper's fence
constraints."""

import decimal
import math
import os
import sys

import numpy as np
import pytest
import sympy as sp

from embed.base.errors import InputError
from embed.base.expression import ExpressionError, parse_expression
from scenarios.disk_fence.checks import validate
from scenarios.disk_fence.plane import disk_centre_on_fence, fence_frame, fence_point, ramp_frame
from scenarios.disk_fence.profile import (GEOMETRY_BAD_PARAMETER, GEOMETRY_CURVATURE,
                                     GEOMETRY_NOT_ALLOWED, GEOMETRY_NOT_FINITE, GEOMETRY_NOT_SMOOTH,
                                     GEOMETRY_NOT_TANGENT, GEOMETRY_SYNTAX, SIGMA, FenceProfile,
                                     GeometryError, arc_sigma_extent)

s = sp.Symbol("s", real=True)
CANARY = "/tmp/pwned_geometry"


# ---------------------------------------------------------------------------- valid text

VALID = [
    ("0.1*s**2", sp.Rational(1, 10) * s ** 2),
    ("0.02*s**2 - 0.003*s**3 + 1e-4*s**4", sp.Rational(1, 50) * s ** 2 - sp.Rational(3, 1000) * s ** 3
     + sp.Rational(1, 10000) * s ** 4),
    ("1.5e-3 * s**3", sp.Rational(3, 2000) * s ** 3),
    ("2.5E2*s**2", 250 * s ** 2),
    ("1e6*s", 1000000 * s),
    ("-s**2/4", -s ** 2 / 4),
    ("+s", s),
    ("- - s", s),
    ("(s - 1)*(s + 2)/3", (s - 1) * (s + 2) / 3),
    ("1 - cos(s)", 1 - sp.cos(s)),
    ("0.3*sin(s)**2", sp.Rational(3, 10) * sp.sin(s) ** 2),
    ("sin(pi*s/2)**2", sp.sin(sp.pi * s / 2) ** 2),
    ("exp(-s**2) - 1 + s**2", sp.exp(-s ** 2) - 1 + s ** 2),
    ("log(1 + s**2)", sp.log(1 + s ** 2)),
    ("sqrt(4 - s**2)", sp.sqrt(4 - s ** 2)),
    ("2 - sqrt(4 - s**2)", 2 - sp.sqrt(4 - s ** 2)),
    ("cosh(s) - 1", sp.cosh(s) - 1),
    ("tanh(s)*sinh(s)", sp.tanh(s) * sp.sinh(s)),
    ("asin(s/3) + acos(s/3) + atan(s)", sp.asin(s / 3) + sp.acos(s / 3) + sp.atan(s)),
    ("tan(s)", sp.tan(s)),
    ("abs(s - 0.5)**3", sp.Abs(s - sp.Rational(1, 2)) ** 3),
    ("sin(cos(exp(s)))", sp.sin(sp.cos(sp.exp(s)))),
    ("sqrt(1 + sin(s)**2) - 1", sp.sqrt(1 + sp.sin(s) ** 2) - 1),
    ("E*s + pi", sp.E * s + sp.pi),
    ("s**(3/2)", s ** sp.Rational(3, 2)),
    ("s**-1", 1 / s),
    ("s**-(1/2)", 1 / sp.sqrt(s)),
    ("s**(-3/-2)", s ** sp.Rational(3, 2)),
    ("s**0.5", sp.sqrt(s)),
    ("s**10", s ** 10),
    ("10**10*s", 10 ** 10 * s),
    ("  s**2\t", s ** 2),
    ("1_000*s", 1000 * s),
    (".5*s", s / 2),
    ("0", sp.Integer(0)),
]


@pytest.mark.parametrize("text,expected", VALID)
def test_valid_text_parses_to_the_expression_built_by_hand(text, expected):
    got = parse_expression(text)
    assert isinstance(got, sp.Basic)
    assert got == expected, (text, got, expected)
    assert sp.simplify(got - expected) == 0


def test_variables_are_real_symbols_and_other_variables_can_be_named():
    assert parse_expression("s").is_real
    assert SIGMA == s
    x, y = sp.Symbol("x", real=True), sp.Symbol("y", real=True)
    assert parse_expression("x*y + sin(x)", variables=("x", "y")) == x * y + sp.sin(x)
    with pytest.raises(ExpressionError) as e:
        parse_expression("s", variables=("x",))
    assert "'s'" in str(e.value) and "x" in str(e.value)
    for bad in ("sin", "pi", "lambda", "_x", "a b", ""):
        with pytest.raises(ValueError):
            parse_expression("1", variables=(bad,))


# ---------------------------------------------------------------------------- malicious text

_REC = {"on": False, "events": []}


def _audit(name, args):
    if _REC["on"]:
        _REC["events"].append((name, args))


sys.addaudithook(_audit)

MALICIOUS = [
    # code injection
    "__import__('os').system('touch /tmp/pwned_geometry')",
    "__import__(\"os\").system(\"touch /tmp/pwned_geometry\")",
    "().__class__.__bases__[0].__subclasses__()",
    "s.__class__",
    "s.__class__.__mro__",
    "sin.__globals__",
    "exp(s).func",
    "lambda: 0",
    "lambda s: s",
    "[x for x in ()]",
    "(x for x in ())",
    "{s}",
    "{'a': s}",
    "open('/etc/passwd')",
    "open",
    "eval('1')",
    "exec",
    "exec('import os')",
    "compile",
    "getattr(s, 'func')",
    "globals()",
    "__builtins__",
    "sympify",
    "Symbol",
    "os",
    "os.system",
    "sin(s)(1)",
    "s(1)",
    "sin(s, s)",
    "sin()",
    "sin(*s)",
    "sin(x=s)",
    "(s := 1)",
    "s if s else 1",
    "not s",
    "s and 1",
    "s < 1",
    "s == s",
    "f'{s}'",
    "'s'",
    "b's'",
    "s[0]",
    "s[0:1]",
    "(s, s)",
    "[s]",
    "...",
    "None",
    "True",
    "1j",
    "s % 2",
    "s // 2",
    "s @ s",
    "s ^ 2",
    "s | 1",
    "~s",
    "s << 1",
    "await s",
    "yield s",
    "s; import os",
    "s\nimport os",
    "s # comment",
    "\\x41",
    "0x1p3",
    # huge exponents and out-of-range numbers
    "9**9**9",
    "s**1000",
    "s**s",
    "10**400",
    "2**(10**10)",
    "s**(1/0)",
    "s**" + "-" * 40 + "1",
    "s**(1/2/3)",
    "s**11",
    "(s**2)**6",
    "((s**10)**10)**10",
    "s*s*s*s*s*s*s*s*s*s*s",
    "(1e6**10)**10",
    "1e999",
    "1e400",
    "-1e400",
    "1e-400",
    "1e7",
    "10000001",
    "1" * 300,
    "exp(s)**s",
    "E**s",
    # unknown names
    "t",
    "x + y",
    "e",
    "Pi",
    "infinity",
    "nan",
    "inf",
    "sinc(s)",
    "Abs(s)",
    "atan2(s)",
    "sign(s)",
    # empty, blank, too long, too deep, too large
    "",
    " ",
    "   \t ",
    "s+" * 250 + "s",
    "(" * 40 + "s" + ")" * 40,
    "(" * 1000 + "s" + ")" * 1000,
    "-" * 60 + "s",
    "sin(" * 33 + "s" + ")" * 33,
    "+".join(["s"] * 199),
    # non-ASCII tricks
    "\uff53**2",                 # fullwidth s: NFKC-folds to s in Python identifiers
    "\u0455**2",                 # Cyrillic dze, looks like s
    "s\u200b**2",                # zero-width space
    "s**\u00b2",                 # superscript two
    "\u03c0*s",                  # greek pi
    "s\u2212s",                  # minus sign
    "\ufb01",                    # ligature fi
    "s\x00",
    "s\r\n",
    "e\u0301",
    # non-real or infinite constants
    "s/0",
    "log(0)",
    "sqrt(-1)",
    "(-8)**(1/3)",
    "asin(2)",
    "log(-1)*s",
]


def test_malicious_and_malformed_text_is_rejected_and_nothing_runs():
    if os.path.exists(CANARY):
        os.remove(CANARY)
    _REC["events"].clear()
    _REC["on"] = True
    try:
        outcomes = []
        for text in MALICIOUS:
            try:
                parse_expression(text)
                outcomes.append((text, None))
            except ExpressionError as e:
                outcomes.append((text, e))
            try:                                  # the same through the profile constructor
                FenceProfile.from_text(text)
                outcomes.append((text, None))
            except GeometryError as e:
                outcomes.append((text, e))
    finally:
        _REC["on"] = False
    accepted = [t for t, e in outcomes if e is None]
    assert not accepted, accepted
    assert not os.path.exists(CANARY)
    for text, e in outcomes:
        from fmu_src.runtime.status import status_of
        assert isinstance(e, InputError) and status_of(e) == 9
        assert e.code in (GEOMETRY_SYNTAX, GEOMETRY_NOT_ALLOWED, GEOMETRY_NOT_FINITE), (text, e)
        assert str(e) and e.check
    # Nothing from the text ran: the only compile of text is ast.parse of that very text; every
    # exec is a library module being imported from its file; no process, shell, socket or file
    # outside the Python installation is touched.
    roots = tuple({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    stripped = {t.strip() for t in MALICIOUS}
    for name, args in _REC["events"]:
        if name == "compile":
            src = args[0].decode() if isinstance(args[0], bytes) else args[0]
            assert src in stripped or (isinstance(args[1], str) and
                                       os.path.realpath(args[1]).startswith(roots)), args
        elif name == "exec":
            code = args[0]
            assert os.path.realpath(code.co_filename).startswith(roots), code
        elif name == "open":
            assert args[0] is None or os.path.realpath(str(args[0])).startswith(roots), args
        else:
            assert not name.startswith(("os.", "subprocess.", "socket.", "shutil.", "ctypes.",
                                        "builtins.input", "pty.", "webbrowser.")), (name, args)


def test_rejections_name_the_offending_token_and_what_is_allowed():
    def msg(text):
        with pytest.raises(ExpressionError) as e:
            parse_expression(text)
        return e.value

    e = msg("t**2")
    assert e.code == GEOMETRY_NOT_ALLOWED and e.check == "name" and e.value == "t"
    assert "'t'" in str(e) and "allowed names: s, pi, E" in str(e)
    e = msg("sinc(s)")
    assert e.check == "function" and "'sinc'" in str(e) and "sin, cos, tan" in str(e)
    e = msg("s**1000")
    assert e.check == "exponent" and "1000" in str(e) and "<= 10" in str(e)
    e = msg("s**s")
    assert e.check == "exponent" and "'s'" in str(e)
    e = msg("9**9**9")
    assert e.check == "exponent" and "9**9" in str(e)
    e = msg("1e400")
    assert e.check == "literal_range" and "1e400" in str(e) and "not finite" in str(e)
    e = msg("2e6*s")
    assert e.check == "literal_range" and "2e6" in str(e) and "1e+06" in str(e)
    e = msg("s.__class__")
    assert e.check == "construct" and "__class__" in str(e)
    e = msg("open('/etc/passwd')")
    assert e.code == GEOMETRY_SYNTAX and e.check == "character" and e.value == "'"
    e = msg("s^2")
    assert "**" in str(e)
    e = msg("\uff53")
    assert e.check == "character" and "U+FF53" in str(e)
    e = msg("")
    assert e.check == "empty"
    e = msg("s+" * 250 + "s")
    assert e.check == "length" and "501" in str(e)
    e = msg("(" * 40 + "s" + ")" * 40)
    assert e.check == "depth"
    e = msg("-" * 60 + "s")
    assert e.check == "depth"
    e = msg("s +* 2")
    assert e.check == "syntax" and "column" in str(e)
    e = msg("sin(s, s)")
    assert "one argument" in str(e)
    e = msg("sin")
    assert "sin(s)" in str(e)


def test_long_polynomials_are_not_too_deep():
    """Chains of + and * are flattened: a long polynomial is long, not deep."""
    text = " + ".join(f"{k % 7 + 1}e-3*s**{k % 9 + 2}" for k in range(25))
    assert len(text) < 400
    expected = sum(sp.Rational(k % 7 + 1, 1000) * s ** (k % 9 + 2) for k in range(25))
    assert parse_expression(text) == expected


# ---------------------------------------------------------------------------- the arc


def _num(expr, values):
    return float(sp.N(expr.subs(values), 30))


def test_arc_profile_is_the_circle_about_the_centre_on_the_normal_at_P():
    rng = np.random.default_rng(4)
    phi, Px, Py = sp.symbols("phi P_x P_y", real=True)
    for R in (0.5, 2.0, 7.25):
        arc = FenceProfile.arc(R)
        x, y = fence_point(arc, phi, (Px, Py))
        (tx, ty), (nx, ny) = ramp_frame(phi)
        Cx, Cy = Px + R * nx, Py + R * ny                  # centre C on the normal at P
        assert sp.simplify((x - Cx) ** 2 + (y - Cy) ** 2 - sp.nsimplify(R) ** 2) == 0
        assert sp.simplify(x.subs(SIGMA, 0) - Px) == 0 and sp.simplify(y.subs(SIGMA, 0) - Py) == 0
        T, N = fence_frame(arc, phi)
        assert sp.simplify(T[0].subs(SIGMA, 0) - tx) == 0 and sp.simplify(T[1].subs(SIGMA, 0) - ty) == 0
        for _ in range(5):
            v = {phi: rng.uniform(-1, 1), Px: rng.normal(), Py: rng.normal(),
                 SIGMA: rng.uniform(0, 0.99 * R)}
            d = math.hypot(_num(x - Cx, v), _num(y - Cy, v))
            assert abs(d - R) < 1e-12 * R
            # the fence normal N points from the fence towards C: the fence bends towards the disk
            ux, uy = _num(Cx - x, v) / R, _num(Cy - y, v) / R
            assert abs(_num(N[0], v) - ux) < 1e-12 and abs(_num(N[1], v) - uy) < 1e-12


def test_arc_disk_centre_against_the_papers_fence_constraints():
    """gillespie2005 Sec 6.2: u1 = -(R-r)/R u4 cos((q4-L)/R - phi), u2 = (R-r)/R u4 sin((q4-L)/R - phi).

    The disk centre on our arc, c(sigma) = P + sigma t + h n + r N, with the arc length
    a = q4 - L (sigma = R sin(a/R)) differentiated along the path, is compared with the paper's
    relation.  It matches with the path coordinate reflected at P (a -> -a, u4 -> -u4): the same
    circle of radius R - r about C = P + R n and the same speed (R - r)/R |u4|; read literally,
    the paper's relation starts at P against its own ramp constraint u1 = u4 cos(phi),
    u2 = u4 sin(phi), which ours continues.  Integrating the paper's relation from the
    ramp's disk position P + r n stays on that circle.
    """
    rng = np.random.default_rng(8)
    phi, Px, Py, r = sp.symbols("phi P_x P_y r", positive=True)
    for _ in range(4):
        R = float(rng.uniform(1.5, 6.0))
        arc = FenceProfile.arc(R)
        cx, cy = disk_centre_on_fence(arc, phi, (Px, Py), r)
        dc = [sp.diff(c, SIGMA) for c in (cx, cy)]
        fc = sp.lambdify((SIGMA, phi, Px, Py, r), [cx, cy] + dc, "mpmath")
        for _ in range(5):
            ph, px, py = rng.uniform(0.05, 0.6), rng.normal(), rng.normal()
            rr = rng.uniform(0.1, 0.9) * R
            a = rng.uniform(0, 0.95 * math.pi / 2 * R)       # arc length from P: q4 - L
            u4 = rng.normal()
            sig = R * math.sin(a / R)
            x, y, dx, dy = (float(v) for v in fc(sig, ph, px, py, rr))
            ds_dt = math.cos(a / R) * u4                     # d sigma/dt = cos(a/R) da/dt
            u1, u2 = dx * ds_dt, dy * ds_dt
            k = (R - rr) / R
            # paper's relation at q4 - L = -a with u4 -> -u4
            p1 = -k * (-u4) * math.cos(-a / R - ph)
            p2 = k * (-u4) * math.sin(-a / R - ph)
            assert abs(u1 - p1) < 1e-12 and abs(u2 - p2) < 1e-12, (u1, p1, u2, p2)
            assert abs(math.hypot(u1, u2) - k * abs(u4)) < 1e-12
            # the disk centre is on the circle of radius R - r about C
            Cx, Cy = px - R * math.sin(ph), py + R * math.cos(ph)
            assert abs(math.hypot(x - Cx, y - Cy) - (R - rr)) < 1e-12
            # the paper's relation integrated from the ramp's disk position (q4 = L): closed form
            # of int_0^a (-k cos(b/R - phi), k sin(b/R - phi)) db
            x0, y0 = px - rr * math.sin(ph), py + rr * math.cos(ph)
            X = x0 - k * R * (math.sin(a / R - ph) + math.sin(ph))
            Y = y0 - k * R * (math.cos(a / R - ph) - math.cos(ph))
            assert abs(math.hypot(X - Cx, Y - Cy) - (R - rr)) < 1e-12
            # ... and is our arc mirrored at the normal through P: sigma -> -sigma
            mx, my, _, _ = (float(v) for v in fc(-sig, ph, px, py, rr))
            assert abs(X - mx) < 1e-12 and abs(Y - my) < 1e-12
        # at P the disk centre continues the ramp's position P + r n, and its velocity the
        # ramp's direction t = (cos phi, sin phi) of u1 = u4 cos(phi), u2 = u4 sin(phi),
        # scaled by (R - r)/R: u4 is the contact point's rate along the path
        v0 = {SIGMA: 0, phi: 0.3, Px: 1.0, Py: 2.0, r: 0.5}
        assert abs(_num(cx, v0) - (1.0 - 0.5 * math.sin(0.3))) < 1e-14
        assert abs(_num(cy, v0) - (2.0 + 0.5 * math.cos(0.3))) < 1e-14
        assert abs(_num(dc[0], v0) - (R - 0.5) / R * math.cos(0.3)) < 1e-14
        assert abs(_num(dc[1], v0) - (R - 0.5) / R * math.sin(0.3)) < 1e-14


def test_disk_centre_curve_is_the_offset_of_the_fence():
    """For any profile, c = p + r N moves parallel to the fence with speed |p'| (1 - kappa r)."""
    prof = FenceProfile.from_text("0.05*s**2 + 0.01*s**3 - 0.02*sin(s)**2*s")
    validate(prof, 3.0, disk_radius=0.5)
    phi, r = 0.2, 0.5
    px, py = fence_point(prof, phi, (0.0, 0.0))
    cx, cy = disk_centre_on_fence(prof, phi, (0.0, 0.0), r)
    (Tx, Ty), (Nx, Ny) = fence_frame(prof, phi)
    h1, h2 = sp.diff(prof.h, SIGMA), sp.diff(prof.h, SIGMA, 2)
    kappa = h2 / (1 + h1 ** 2) ** sp.Rational(3, 2)
    exprs = [cx - px, cy - py, sp.diff(cx, SIGMA), sp.diff(cy, SIGMA), Tx, Ty, Nx, Ny,
             sp.sqrt(sp.diff(px, SIGMA) ** 2 + sp.diff(py, SIGMA) ** 2), kappa]
    f = sp.lambdify(SIGMA, exprs, "numpy")
    for sg in np.linspace(0, 3, 13):
        ox, oy, dcx, dcy, tx, ty, nx, ny, speed, k = (float(v) for v in f(sg))
        assert abs(math.hypot(ox, oy) - r) < 1e-13
        assert abs(tx * nx + ty * ny) < 1e-14 and abs(math.hypot(nx, ny) - 1) < 1e-14
        assert abs(tx * ny - ty * nx - 1) < 1e-14            # N is T turned by +90 deg (towards n)
        assert abs(dcx * nx + dcy * ny) < 1e-12              # c' has no normal component
        assert abs((dcx * tx + dcy * ty) - speed * (1 - k * r)) < 1e-12
    # the profile's derivatives match sympy's own
    d = prof.derivatives()
    assert sp.simplify(d[1] - h1) == 0 and sp.simplify(d[2] - h2) == 0


def test_arc_closed_forms_match_the_general_formulas():
    """The arc's closed-form h', h'' and frame equal sympy's derivatives of its h."""
    arc = FenceProfile.arc(2.5)
    gen = FenceProfile(arc.h, "curve", None, None)
    assert sp.simplify(arc.derivatives()[1] - sp.diff(arc.h, SIGMA)) == 0
    assert sp.simplify(arc.derivatives()[2] - sp.diff(arc.h, SIGMA, 2)) == 0
    phi = sp.Symbol("phi", real=True)
    fa = sp.lambdify((SIGMA, phi), [*arc.derivatives(), *sum(fence_frame(arc, phi), ())], "numpy")
    fg = sp.lambdify((SIGMA, phi), [*gen.derivatives(), *sum(fence_frame(gen, phi), ())], "numpy")
    for sg in (0.0, 0.7, 1.9, 2.4):
        for ph in (-0.4, 0.26):
            assert np.allclose(fa(sg, ph), fg(sg, ph), rtol=1e-13, atol=1e-14)


def test_arc_and_the_same_circle_as_text_are_the_same_profile():
    arc = FenceProfile.arc(2.5)
    text = FenceProfile.from_text("2.5 - sqrt(2.5**2 - s**2)")
    assert sp.simplify(arc.h - text.h) == 0             # the arc is written without cancellation
    # the arc's closed-form check, the same circle as text, and the arc's own expression checked
    # on the grid like any text all measure the same
    grid = FenceProfile(arc.h, "curve", None, None)
    ra, rt, rg = (validate(p, 2.0, disk_radius=1.0) for p in (arc, text, grid))
    for a, b, c in zip(ra.__dict__.values(), rt.__dict__.values(), rg.__dict__.values()):
        assert abs(a - b) < 1e-6 * max(1.0, abs(a)) and abs(a - c) < 1e-6 * max(1.0, abs(a))
    assert abs(ra.max_curvature - 1 / 2.5) < 1e-12
    # the arc length of the fence from P to sigma = 2: R asin(2/R)
    assert abs(ra.path_length - 2.5 * math.asin(2.0 / 2.5)) < 1e-6
    # arc length <-> sigma extent
    assert abs(arc_sigma_extent(2.5, 2.5 * math.asin(0.8)) - 2.0) < 1e-12


def test_evaluator_matches_the_sympy_derivatives():
    prof = FenceProfile.from_text("0.1*s**2*(s - 0.5)*abs(s - 0.5) + 0.02*log(1 + s**2)*atan(s)")
    sig = np.linspace(0, 2, 41) + 0.0123
    h, h1, h2 = prof.evaluator()(sig)
    ref = sp.lambdify(SIGMA, list(prof.derivatives()), "numpy")(sig)
    for a, b in zip((h, h1, h2), ref):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------- validate


VALID_PROFILES = [
    ("0.1*s**2", 2.0),
    ("0.4*(1 - cos(s))", 3.0),
    ("0.02*s**2 + 0.01*s**3 - 0.001*s**4 + 0.05*sin(s)**2*s", 5.0),
    ("0.1*s**2*log(s + 1)", 2.0),
    ("0.05*s**2*sqrt(s + 1)", 3.0),
    ("0.1*s**2/(1 + s**2)", 3.0),
    ("0.2*abs(s)**3", 1.0),
    ("0.1*s**2*(s - 0.5)*abs(s - 0.5)", 1.0),      # C1 with a jump of curvature at 0.5
    ("0.1*s**2.5", 1.0),
    ("-0.1*s**2", 2.0),                           # bending away from the disk
    ("0", 5.0),                                   # the ramp continued
    ("1e-7*sin(3000*s)*s**2", 1.0),
    ("0.01*(abs(s) - s)", 1.0),                    # abs without effect on the domain
    ("0.1*s**2 + 0.05*abs(s - 0.5)**3 - 0.05*(0.5 - s)**3", 1.0),   # C2 at 0.5
    ("0.1*s**2 + 0.01*(s - 0.3)*abs(s - 0.3) + 0.0009 - 0.006*s", 1.0),  # C1 at 0.3
    ("1000 - sqrt(1000**2 - s**2)", 10.0),         # a large circle, written with cancellation
]


@pytest.mark.parametrize("text,L", VALID_PROFILES)
def test_valid_profiles_pass(text, L):
    rep = validate(FenceProfile.from_text(text), L, disk_radius=1.0)
    assert rep.length == L and rep.path_length >= L and rep.max_curvature < 1.0


REJECTED = [
    # not finite or not real on the domain
    ("log(s - 1)", 2.0, GEOMETRY_NOT_FINITE, "finite"),
    ("1/(s - 0.5)", 1.0, GEOMETRY_NOT_FINITE, "finite"),
    ("0.1*s**2*asin(s/2)", 2.5, GEOMETRY_NOT_FINITE, "finite"),
    ("exp(50*s) - 1 - 50*s", 20.0, GEOMETRY_NOT_FINITE, "finite"),
    ("exp(-1/s)", 1.0, GEOMETRY_NOT_FINITE, "finite"),
    ("0.1*s**1.5", 1.0, GEOMETRY_NOT_FINITE, "finite"),
    ("sqrt(0.25 - s)*s**2", 1.0, GEOMETRY_NOT_FINITE, "finite"),
    # singular between grid points (no grid point hits the zero)
    ("s**2/(s - 0.50003)", 1.0, GEOMETRY_NOT_FINITE, "singular"),
    ("tan(s)*s**2", 2.0, GEOMETRY_NOT_FINITE, "singular"),
    ("0.1*s**2 + 1e-9/(1 - cos(s - 0.3001))", 3.0, GEOMETRY_NOT_FINITE, "singular"),
    ("s**2*abs(s - 0.3001)/(s - 0.3001)", 1.0, GEOMETRY_NOT_FINITE, "singular"),
    ("s**2*log(abs(s - 0.70001))", 1.0, GEOMETRY_NOT_FINITE, "singular"),
    # not continuous or not tangent with the ramp at P
    ("1 + s", 1.0, GEOMETRY_NOT_TANGENT, "continuity"),
    ("0.1 + 0.1*s**2", 1.0, GEOMETRY_NOT_TANGENT, "continuity"),
    ("s", 1.0, GEOMETRY_NOT_TANGENT, "tangency"),
    ("0.01*s + 0.1*s**2", 1.0, GEOMETRY_NOT_TANGENT, "tangency"),
    ("sin(s)*0.2", 1.0, GEOMETRY_NOT_TANGENT, "tangency"),
    ("0.1*s**2 + 0.01*abs(s)", 1.0, GEOMETRY_NOT_TANGENT, "tangency"),   # h'(0+) = 0.01
    # kinks inside the fence, on and between grid points, of any size
    ("0.1*s**2 + 0.01*(abs(s - 0.5) - 0.5 + s)", 1.0, GEOMETRY_NOT_SMOOTH, "smooth"),
    ("0.1*s**2 + 0.0001*(abs(s - 0.50013) - 0.50013 + s)", 1.0, GEOMETRY_NOT_SMOOTH, "smooth"),
    ("0.1*s**2 + 1e-8*(abs(s - 0.50013) - 0.50013 + s)", 1.0, GEOMETRY_NOT_SMOOTH, "smooth"),
    ("0.1*s**2 + 0.2*(abs(s - 1.2345678) - 1.2345678 + s)", 2.0, GEOMETRY_NOT_SMOOTH, "smooth"),
    ("0.1*s**2 + 1e-7*(abs(sin(1000*s)) - sin(1000*s))", 1.0, GEOMETRY_NOT_SMOOTH, "smooth"),
    # u dips below 0 and back between two grid points: two kinks 6e-5 apart
    ("0.1*s**2 + 0.001*(abs((s - 0.50012)**2 - 1e-9) - ((s - 0.50012)**2 - 1e-9))", 1.0,
     GEOMETRY_NOT_SMOOTH, "smooth"),
    ("0.1*s**2 + 0.01*abs(abs(s - 0.5) - 0.2) - 0.003 + 0.01*s", 1.0, GEOMETRY_NOT_SMOOTH, "smooth"),
    # curvature
    ("100*s**2", 1.0, GEOMETRY_CURVATURE, "curvature"),
    ("0.5*s**2", 1.0, GEOMETRY_CURVATURE, "curvature"),     # radius of curvature = r = 1
    ("-600*s**2", 1.0, GEOMETRY_CURVATURE, "curvature"),    # convex, above the absolute limit
    ("s**3", 1.0, GEOMETRY_CURVATURE, "curvature"),
    ("0.001*sin(1000*s)*s**2", 1.0, GEOMETRY_CURVATURE, "curvature"),
]


@pytest.mark.parametrize("text,L,code,check", REJECTED)
def test_validate_rejects(text, L, code, check):
    prof = FenceProfile.from_text(text)              # parses: the text itself is fine
    with pytest.raises(GeometryError) as e:
        validate(prof, L, disk_radius=1.0)
    assert (e.value.code, e.value.check) == (code, check), str(e.value)
    assert text in str(e.value)                       # names the profile


def test_large_arc_has_no_cancellation():
    for R, L in ((1e5, 1.0), (1e6, 100.0), (1e12, 1.0)):
        arc = FenceProfile.arc(R)
        rep = validate(FenceProfile(arc.h, "curve", None, None), L)   # on the grid, as text is
        assert abs(rep.max_curvature - 1 / R) < 1e-9 / R
        with decimal.localcontext() as ctx:               # reference: 50 digits, no cancellation
            ctx.prec = 50
            D = decimal.Decimal
            ref = float(D(R) - (D(R) ** 2 - D(L) ** 2).sqrt())
        assert abs(rep.max_abs_height - ref) < 1e-12 * ref


def test_profiles_pickle_and_accept_numpy_numbers():
    import pickle
    arc = FenceProfile.arc(np.float64(2.0))
    assert arc.h == FenceProfile.arc(2).h and arc.radius == 2.0
    validate(arc, np.float64(1.5), disk_radius=np.float64(1.0))
    text = FenceProfile.from_text("0.1*s**2 + 0.01*sin(s)**2")
    validate(text, 2.0)                               # fills the compiled cache
    for prof in (arc, text):
        back = pickle.loads(pickle.dumps(prof))
        assert back == prof and back.kind == prof.kind and back.text == prof.text
        assert validate(back, 1.5) == validate(prof, 1.5)


def test_random_whitelisted_text_only_ever_raises_geometry_errors():
    """Random expressions from the whitelist, some with a character mutated: parse and validate
    either accept or raise GeometryError, never anything else, and never take long."""
    import random
    import time
    rng = random.Random(5)
    funcs = ["sin", "cos", "tan", "exp", "log", "sqrt", "sinh", "cosh", "tanh", "asin", "acos",
             "atan", "abs"]

    def gen(d):
        r = rng.random()
        if d <= 0 or r < 0.25:
            return rng.choice(["s", "s", "pi", "E", str(rng.randint(0, 9)), f"{rng.uniform(-3, 3):.3g}",
                               "1e-3", "2.5e1"])
        if r < 0.5:
            return f"{rng.choice(funcs)}({gen(d - 1)})"
        if r < 0.85:
            return f"({gen(d - 1)}){rng.choice('+-*/')}({gen(d - 1)})"
        if r < 0.95:
            return f"({gen(d - 1)})**{rng.choice(['2', '3', '-1', '(1/2)', '(3/2)', '0.5', '-2'])}"
        return f"-({gen(d - 1)})"

    slowest, outcomes = 0.0, set()
    for _ in range(300):
        t = gen(rng.randint(1, 8))
        if rng.random() < 0.5:
            t = f"s**2*({t})"
        if rng.random() < 0.2:
            k = rng.randrange(len(t))
            t = t[:k] + rng.choice("()+-*/.,esx1 ") + t[k + 1:]
        t0 = time.perf_counter()
        try:
            validate(FenceProfile.from_text(t), rng.choice([0.5, 1.0, 3.0]), disk_radius=0.5)
            outcomes.add(0)
        except GeometryError as e:
            outcomes.add(e.code)
        slowest = max(slowest, time.perf_counter() - t0)
    assert {0, GEOMETRY_SYNTAX, GEOMETRY_NOT_FINITE, GEOMETRY_NOT_TANGENT} <= outcomes
    assert slowest < 5.0, slowest                     # generous: ~0.1 s seen on a loaded machine


def test_deep_nesting_stays_cheap():
    """Inputs that once took minutes in sympy's automatic evaluation (found by fuzzing)."""
    import time
    for text in ("s**2*" + "cosh(" * 25 + "abs(s - 0.5)" + ")" * 25,
                 "cosh(" * 25 + "s" + ")" * 25,
                 "s**2*(((((((-2.35)*((2.5e1)*(s)))**3)*(log((pi)*((E)*(3)))))-(atan((((s)/(s))/(s))"
                 "/((sinh(E))*((s)-(E))))))/(abs(((log(acos(2.5e1)))+(((2.5e1)**(1/2))/(cos(E))))**2)))"
                 "/((abs(s))/((-((log(atan(s)))**(3/2)))-(-((atan(s))-((tan(1e-3))**10))))))",
                 "(((sqrt(((s)*(1.57))**(3/2)))*((exp(atan(-0.237)))*(1)))**(1/2))/(cos(tanh(1e-3)))"):
        t0 = time.perf_counter()
        try:
            validate(FenceProfile.from_text(text), 1.0)
        except GeometryError:
            pass
        assert time.perf_counter() - t0 < 5.0


def test_derivatives_hold_no_sign_of_a_fractional_power():
    prof = FenceProfile.from_text("0.01*s**2*abs(sqrt((3 - s)*(s + 1)))")
    validate(prof, 2.0)
    for d in prof.derivatives():
        assert not any(isinstance(e.args[0], sp.Pow) for e in d.atoms(sp.sign))
    g = sp.lambdify(SIGMA, list(prof.derivatives()), "numpy")
    x = np.linspace(0.1, 2.0, 7)
    assert np.allclose(g(x)[0], 0.01 * x ** 2 * np.sqrt((3 - x) * (x + 1)), rtol=1e-14)
    d1 = sp.lambdify(SIGMA, sp.diff(0.01 * SIGMA ** 2 * sp.sqrt((3 - SIGMA) * (SIGMA + 1)), SIGMA))
    assert np.allclose(g(x)[1], d1(x), rtol=1e-12)


def test_inputs_that_crashed_symengine_are_handled():
    """symengine 0.15 segfaults on sign(sqrt(-s)); the engine never builds sign() in symengine."""
    for text in ("log(abs(sqrt((((1e-3)*(pi))*((s)*(0.184)))/(-((2.5e1)+(s))))))",
                 "s**2*abs(sqrt(-s))", "s**2*abs(sqrt(1 - s))"):
        prof = FenceProfile.from_text(text)
        with pytest.raises(GeometryError):
            validate(prof, 2.0)


def test_curvature_limit_and_disk_radius():
    prof = FenceProfile.from_text("-0.5*s**2")       # convex: radius 1 away from the disk
    validate(prof, 1.0, disk_radius=2.0)              # a disk follows any convex bend
    with pytest.raises(GeometryError) as e:
        validate(prof, 1.0, max_curvature=0.5)
    assert e.value.check == "curvature" and "limit 0.5" in str(e.value)
    arc = FenceProfile.arc(2.0)
    validate(arc, 1.5, disk_radius=1.9)
    for r in (2.0, 2.5):
        with pytest.raises(GeometryError) as e:
            validate(arc, 1.5, disk_radius=r)
        assert e.value.code == GEOMETRY_CURVATURE and "R > r" in str(e.value)


@pytest.mark.parametrize("R", [-1.0, 0.0, -0.0, float("nan"), float("inf"), -float("inf"),
                               "abc", None])
def test_bad_radius_is_rejected(R):
    with pytest.raises(GeometryError) as e:
        FenceProfile.arc(R)
    assert e.value.code == GEOMETRY_BAD_PARAMETER and e.value.check == "radius"
    assert "radius" in str(e.value)


@pytest.mark.parametrize("L", [-1.0, 0.0, float("nan"), float("inf"), "1 m"])
def test_bad_length_is_rejected(L):
    for prof in (FenceProfile.arc(2.0), FenceProfile.from_text("0.1*s**2")):
        with pytest.raises(GeometryError) as e:
            validate(prof, L)
        assert e.value.code == GEOMETRY_BAD_PARAMETER and e.value.check == "length"


def test_arc_beyond_a_quarter_turn_is_rejected():
    arc = FenceProfile.arc(2.0)
    for L in (2.0, 3.0):
        with pytest.raises(GeometryError) as e:
            validate(arc, L)
        assert e.value.code == GEOMETRY_BAD_PARAMETER and "quarter turn" in str(e.value)
    with pytest.raises(GeometryError) as e:
        arc_sigma_extent(2.0, math.pi)                 # pi/2 rad: a quarter turn
    assert e.value.code == GEOMETRY_BAD_PARAMETER
    for bad in (float("nan"), -1.0, 0.0):
        with pytest.raises(GeometryError):
            arc_sigma_extent(2.0, bad)
        with pytest.raises(GeometryError):
            arc_sigma_extent(bad, 1.0)


def test_geometry_error_is_an_input_error():
    assert issubclass(GeometryError, InputError)
    with pytest.raises(InputError):
        parse_expression("t")


@pytest.mark.parametrize("text, same", [
    ("0.5*(1 - cos(0.3*s))", None), ("0.02*s**2 + 0.001*s**4", None),
    ("0.05*s**2*exp(-0.01*s)", None), ("10 - sqrt(10**2 - s**2)", None),
    ("0.01*abs(s - 1)**3 + 0.01*s**2", None),
    ("0.01*s**2*abs(sqrt((3 - s)*(s + 1)))", "0.01*s**2*sqrt((3 - s)*(s + 1))")])
def test_jet_is_the_profile_and_its_first_three_derivatives(text, same):
    """FenceProfile.jet (symengine, every abs(u) as u times a constant, then sign(u)) against
    sympy's own derivatives of h (or of ``same``, equal to h on the points without an abs),
    away from the zeros of abs arguments."""
    import symengine as se
    prof = FenceProfile.from_text(text)
    jet = se.Lambdify([se.Symbol(SIGMA.name)], prof.jet(), real=True)
    h = FenceProfile.from_text(same or text).h
    ref = [sp.diff(h, SIGMA, k).replace(sp.DiracDelta, lambda *a: 0) for k in range(4)]
    f = sp.lambdify(SIGMA, ref, "numpy")
    for s in (0.03, 0.4, 1.7, 2.9):
        got, want = jet([s]), np.array(f(s), dtype=float)
        assert got == pytest.approx(want, rel=1e-11, abs=1e-14), s
