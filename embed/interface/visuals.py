"""What a run looks like, declared once in the model's own symbols (issue 26; docs/guide.md, "Seeing
the run").

A scenario may pass ``Scenario(visuals=Visuals(...))``: shapes whose positions are sympy
expressions in the coordinates q, the speeds u, t, the parameters and inputs, the automaton's
discrete variables (a fence's radius, the stance foot) and the declared contact forces or
multipliers ``lambda_<constraint>``.  ``embed-fmu animate`` evaluates them at every recorded
frame through the model's kinematics (``fmu_src.host.see.kinematics`` compiles them once, on the host);
nothing here draws or imports a plotting library, so the FMU carries only these declarations.

A *place* is a ``sympy.physics.vector.Vector`` (the position from the origin, expressed through
the visuals' frame), a ``sympy.physics.vector.Point`` (its position from ``Visuals.origin``) or a
tuple of 2 or 3 expressions (x, y[, z] in the frame's axes).  A model without visuals is drawn
from its bodies' points (``fmu_src.host.see.kinematics.default_visuals``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import sympy as sp

from ..model.model import _expression_object


@dataclass(frozen=True)
class Segment:
    """A straight link between two places (a rod, a crank, a leg)."""

    a: object
    b: object
    name: str = ""
    color: str = "#1f4e79"
    width: float = 4.0


@dataclass(frozen=True)
class Sphere:
    """A ball of ``radius`` about ``center`` (a circle in 2D); ``frame`` (a ReferenceFrame fixed
    in the body, optional) adds a marked radius so that rolling and spinning show."""

    center: object
    radius: object
    name: str = ""
    color: str = "#c0392b"
    frame: object = None


@dataclass(frozen=True)
class Box:
    """A box of edge lengths ``size`` (3 expressions) centred at ``center``, its edges along the
    body frame ``frame`` (a ReferenceFrame; None: the visuals' frame); drawn as its 12 edges."""

    center: object
    size: tuple
    frame: object = None
    name: str = ""
    color: str = "#7f8c8d"


@dataclass(frozen=True)
class Cylinder:
    """A cylinder of ``radius`` whose axis runs from place ``a`` to place ``b``; drawn as its two
    end circles and four generators (in 2D: a thick segment)."""

    a: object
    b: object
    radius: object
    name: str = ""
    color: str = "#8e44ad"


@dataclass(frozen=True)
class Curve:
    """A surface seen edge-on or a curve: the place ``at`` (expressions in the parameter symbol
    ``s``) for s in [lo, hi], sampled at ``samples`` points (the ramp, the belt, the bowl's rim,
    a fence).  ``when``: an expression; the curve is drawn only where it is > 0 (a fence that is
    announced, a part on the belt)."""

    at: object
    s: object
    lo: object
    hi: object
    samples: int = 60
    name: str = ""
    color: str = "#555555"
    width: float = 2.0
    when: object = None


@dataclass(frozen=True)
class Arrow:
    """A force (or any vector) ``vector`` drawn at place ``at``, ``scale`` metres per unit of it;
    in the model's declared contact forces or constraint multipliers ``lambda_<constraint>``."""

    at: object
    vector: object
    name: str = ""
    scale: float = 0.02
    color: str = "#e67e22"


@dataclass(frozen=True)
class Visuals:
    """The shapes of a model, and the points whose positions the page reports by name.

    Parameters
    ----------
    frame : ReferenceFrame
        The inertial frame places are expressed in (x right, y up in 2D).
    items : sequence of Segment, Sphere, Box, Cylinder, Curve, Arrow
    origin : Point, optional
        The fixed point places given as ``Point`` are measured from.
    points : dict, optional
        name -> place: points marked and labelled (the tip, the contact point); their
        positions at each frame are the page's ``points`` trace, in this order.
    dim : int
        2 (drawn in the x-y plane) or 3.
    """

    frame: object
    items: tuple = ()
    origin: object = None
    points: dict = field(default_factory=dict)
    dim: int = 2
    up: Optional[str] = None      # 3D: the axis drawn upward ("z" default)

    def __post_init__(self):
        if self.dim not in (2, 3):
            from ..base.errors import ModelDefinitionError
            raise ModelDefinitionError(f"Visuals(dim={self.dim!r}): give 2 or 3")
        object.__setattr__(self, "items", tuple(self.items))
        object.__setattr__(self, "points", dict(self.points))


def place(p, frame, origin=None, dim=3) -> list:
    """The ``dim`` components of place ``p`` along ``frame``'s x, y, z (module docstring).

    Returns
    -------
    list of sympy expressions
    """
    from sympy.physics.vector import Point, Vector

    from ..base.errors import ModelDefinitionError

    if isinstance(p, Point):
        if origin is None:
            raise ModelDefinitionError(f"visual place {p.name}: a Point needs Visuals(origin=...)")
        p = p.pos_from(origin)
    if isinstance(p, Vector):
        comps = [p.dot(frame.x), p.dot(frame.y), p.dot(frame.z)]
    elif isinstance(p, (tuple, list)) and len(p) in (2, 3):
        comps = [sp.sympify(_expression_object(c), strict=True) for c in p] \
            + [sp.Integer(0)] * (3 - len(p))     # numbers or expressions, never text
    else:
        raise ModelDefinitionError(f"visual place {p!r}: give a Vector, a Point or (x, y[, z])")
    return comps[:dim]


VISUAL_TYPES = (Segment, Sphere, Box, Cylinder, Curve, Arrow)
