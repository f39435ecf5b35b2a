"""The package's module-level symbols (sympy and symengine), made when this module is first
imported: the modules that hold what the stepping process runs (``profile``, ``modes``,
``jet_mode``, ``family``, ``points``, ``jobs``) read them as ``S.NAME`` through a lazy module
(``embed.base.lazy.LazyModule``), so that importing those imports neither sympy nor symengine
and a scenario image can name their classes and functions by reference (issue 30,
docs/design.md "Start-up, sixth round")."""

from __future__ import annotations

import symengine as se
import sympy as sp

from embed.base.expression import symbol
from embed.model.model import TIME  # noqa: F401 - the time symbol (``family``: SYM.TIME)

SIGMA = symbol("s")         # the profile's variable: the distance from P along the ramp line
PROFILE_H = se.Function("fence_h")    # h of the fence of any profile, a function of q4
R_ARC, LF_ARC = sp.symbols("R_arc Lf_arc")    # the arc family's radius and length
POLY_C = sp.symbols("c2_poly c3_poly")        # the polynomial family's c2, c3
LF_POLY = sp.Symbol("Lf_poly")
JET = tuple(se.Symbol(f"fence_h{k}") for k in range(4))    # d^k h / ds^k at s = q4 - L
LF_JET = se.Symbol("fence_Lf")
