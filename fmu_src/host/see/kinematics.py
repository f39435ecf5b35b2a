"""A model's visuals (``embed.interface.visuals``) evaluated at recorded frames: each shape's expressions
compiled once with sympy's ``lambdify`` (numpy, cse) over the run's columns, and evaluated for
all frames at once.  A shape becomes a polyline: an array (frames, points, dim), NaN rows
separating its strokes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.physics.mechanics import Particle
from sympy.physics.vector import dynamicsymbols

from embed.base.errors import ModelDefinitionError
from embed.interface.visuals import Arrow, Box, Curve, Cylinder, Segment, Sphere, Visuals, place

CIRCLE = 33          # points of a drawn circle


def column_names(sc) -> list:
    """The names a visual may use, in the order of the compiled functions' arguments: t,
    coordinates, speeds, parameters, inputs, discrete variables, declared forces and the
    multipliers ``lambda_<constraint>``."""
    aut = sc.automaton
    m = aut.model
    names = (["t"] + [str(s) for s in m.q + m.u] + [v.name for v in sc.parameters]
             + [str(s) for s in m.params + m.inputs] + [v.name for v in sc.inputs]
             + list(aut.discrete) + [str(f) for f in m.forces]
             + ["lambda_" + c for c in aut.constraints])
    return list(dict.fromkeys(names))


@dataclass
class Stroke:
    """One drawn shape over the frames: ``xyz`` (frames, points, dim); ``static`` when no frame
    differs from the first."""

    xyz: np.ndarray
    name: str
    color: str
    width: float
    kind: str            # "line", "curve" or "arrow"

    @property
    def static(self) -> bool:
        a = self.xyz
        return bool(np.allclose(a, a[:1], equal_nan=True, atol=1e-12))


class Kinematics:
    """The visuals of scenario ``sc`` (its declared ``visuals`` or ``default_visuals``), compiled.

    Parameters
    ----------
    sc : embed.Scenario
    """

    def __init__(self, sc):
        self.visuals = sc.visuals if getattr(sc, "visuals", None) is not None \
            else default_visuals(sc.automaton.model)
        v = self.visuals
        self.dim = v.dim
        self.names = column_names(sc)
        self.symbols = [sp.Symbol(n) for n in self.names]
        self.used = set()                # the names some visual uses (a run needs only these)
        self.scenario = sc.name
        self._point_fn = self._compile([c for p in v.points.values() for c in self.place(p)])
        self.point_names = list(v.points)
        self._items = [(item, self._prepare(item)) for item in v.items]

    # ---------------------------------------------------------------- compile
    def plain(self, e):
        """``e`` in plain symbols (q1 for q1(t)); a symbol no column names is an error."""
        e = sp.sympify(e)
        t = dynamicsymbols._t
        e = e.xreplace({f: sp.Symbol(str(f.func)) for f in e.atoms(AppliedUndef) if f.args == (t,)})
        unknown = sorted(str(s) for s in e.free_symbols if str(s) not in self.names)
        if unknown:
            raise ModelDefinitionError(
                f"{self.scenario}: a visual uses {unknown}, which are neither coordinates, "
                "speeds, parameters, inputs, discrete variables, forces nor lambda_<constraint>")
        self.used |= {str(s) for s in e.free_symbols}
        return e

    def place(self, p) -> list:
        return [self.plain(c) for c in place(p, self.visuals.frame, self.visuals.origin, self.dim)]

    def _compile(self, exprs, extra=()):
        return sp.lambdify(list(extra) + self.symbols, exprs or [sp.Integer(0)], modules="numpy",
                           cse=True)

    def _axes(self, frame):
        N = self.visuals.frame
        frame = frame or N
        return [[self.plain(a.dot(b)) for b in (N.x, N.y, N.z)] for a in (frame.x, frame.y, frame.z)]

    def _prepare(self, item):
        if _is(item, Segment):
            return self._compile(self.place(item.a) + self.place(item.b))
        if _is(item, Sphere):
            axes = self._axes(item.frame) if item.frame is not None else []
            return self._compile(self.place(item.center) + [self.plain(item.radius)]
                                 + [c for a in axes for c in a])
        if _is(item, Box):
            return self._compile(self.place(item.center) + [self.plain(s) for s in item.size]
                                 + [c for a in self._axes(item.frame) for c in a])
        if _is(item, Cylinder):
            return self._compile(self.place(item.a) + self.place(item.b) + [self.plain(item.radius)])
        if _is(item, Curve):
            s = sp.Dummy("curve_s")     # the scenario may have a symbol of the same name
            at = [sp.sympify(e).xreplace({item.s: s}) for e in place(
                item.at, self.visuals.frame, self.visuals.origin, self.dim)]
            when = [sp.sympify(item.when).xreplace({item.s: s})] if item.when is not None else []
            self.names.append(str(s))
            try:
                exprs = [self.plain(e) for e in at + when]
                ends = self._compile([self.plain(item.lo), self.plain(item.hi)])
            finally:
                self.names.pop()
            return ends, self._compile(exprs, extra=[s])
        if _is(item, Arrow):
            return self._compile(self.place(item.at) + [self.plain(c) for c in place(
                item.vector, self.visuals.frame, None, self.dim)])
        raise ModelDefinitionError(f"{self.scenario}: {item!r} is no visual ({Visuals.__name__} "
                                   "items are Segment, Sphere, Box, Cylinder, Curve and Arrow)")

    # ---------------------------------------------------------------- evaluate
    def columns(self, rec) -> list:
        """The run's columns in argument order (``record.Record.column``); a name no visual
        uses is 0 (an FMU's outputs need not hold the speeds, say)."""
        return [rec.column(n) if n in self.used or n == "t" else 0.0 for n in self.names]

    def points(self, rec) -> np.ndarray:
        """The declared points at every frame: (frames, points, dim)."""
        if not self.point_names:
            return np.zeros((rec.frames, 0, self.dim))
        flat = _frames(self._point_fn(*self.columns(rec)), rec.frames)
        return flat.reshape(rec.frames, len(self.point_names), self.dim)

    def strokes(self, rec) -> list:
        """Every visual at every frame, as ``Stroke`` polylines."""
        cols = self.columns(rec)
        out = []
        for item, fn in self._items:
            xyz = _DRAW[type(item).__name__](self, item, fn, cols, rec.frames)
            kind = {"Arrow": "arrow", "Curve": "curve"}.get(type(item).__name__, "line")
            out.append(Stroke(xyz, item.name or type(item).__name__.lower(), item.color,
                              getattr(item, "width", 3.0), kind))
        return out


def _is(item, cls) -> bool:
    """Whether ``item`` is a ``cls`` shape, by name: a scenario imported from an FMU declares
    its visuals with the FMU's own copy of embed (packages renamed embed<tag>)."""
    return type(item).__name__ == cls.__name__ and type(item).__module__.split(".", 1)[-1] \
        == cls.__module__.split(".", 1)[-1]


def _frames(values, frames) -> np.ndarray:
    """The lambdified outputs as an array (frames, outputs), constants broadcast."""
    return np.stack([np.broadcast_to(np.asarray(v, dtype=float), (frames,)) for v in values], axis=1)


def _circle(c, e1, e2, r):
    """Points (frames, CIRCLE, dim) of the circle of radius r about c in the plane of e1, e2."""
    th = np.linspace(0.0, 2 * np.pi, CIRCLE)
    return (c[:, None, :] + r[:, None, None] * (np.cos(th)[None, :, None] * e1[:, None, :]
                                                 + np.sin(th)[None, :, None] * e2[:, None, :]))


def _gap(frames, dim):
    return np.full((frames, 1, dim), np.nan)


def _join(parts, frames, dim):
    out = []
    for p in parts:
        out += [p, _gap(frames, dim)]
    return np.concatenate(out[:-1], axis=1)


def _segment(k, item, fn, cols, F):
    v = _frames(fn(*cols), F)
    return v.reshape(F, 2, k.dim)


def _sphere(k, item, fn, cols, F):
    v = _frames(fn(*cols), F)
    d = k.dim
    c, r = v[:, :d], v[:, d]
    axes = v[:, d + 1:].reshape(F, 3, 3)[:, :, :d] if v.shape[1] > d + 1 else None
    eye = np.broadcast_to(np.eye(3)[:, :d], (F, 3, d))
    a = axes if axes is not None else eye
    if d == 2:
        parts = [_circle(c, eye[:, 0], eye[:, 1], r)]
    else:
        parts = [_circle(c, a[:, 0], a[:, 1], r), _circle(c, a[:, 0], a[:, 2], r),
                 _circle(c, a[:, 1], a[:, 2], r)]
    if axes is not None:      # a marked radius along the body's x: rolling and spin show
        parts.append(np.stack([c, c + r[:, None] * a[:, 0]], axis=1))
    return _join(parts, F, d)


BOX_EDGES = [(0, 1), (1, 3), (3, 2), (2, 0), (4, 5), (5, 7), (7, 6), (6, 4), (0, 4), (1, 5),
             (2, 6), (3, 7)]


def _box(k, item, fn, cols, F):
    v = _frames(fn(*cols), F)
    d = k.dim
    c, size, axes = v[:, :d], v[:, d:d + 3], v[:, d + 3:].reshape(F, 3, 3)[:, :, :d]
    signs = np.array([[sx, sy, sz] for sx in (-.5, .5) for sy in (-.5, .5) for sz in (-.5, .5)])
    corners = c[:, None, :] + np.einsum("kj,fj,fjd->fkd", signs, size, axes)
    if d == 2:
        ring = [0, 2, 6, 4, 0]       # z = -1/2 face seen from +z
        return corners[:, ring, :]
    return _join([corners[:, list(e), :] for e in BOX_EDGES], F, d)


def _cylinder(k, item, fn, cols, F):
    v = _frames(fn(*cols), F)
    d = k.dim
    a, b, r = v[:, :d], v[:, d:2 * d], v[:, 2 * d]
    n = b - a
    n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    if d == 2:
        p = np.stack([-n[:, 1], n[:, 0]], axis=1) * r[:, None]
        return np.stack([a + p, b + p, b - p, a - p, a + p], axis=1)
    ref = np.where(np.abs(n[:, 2:3]) < 0.9, [[0.0, 0.0, 1.0]], [[1.0, 0.0, 0.0]])
    e1 = np.cross(n, ref)
    e1 /= np.linalg.norm(e1, axis=1, keepdims=True)
    e2 = np.cross(n, e1)
    parts = [_circle(a, e1, e2, r), _circle(b, e1, e2, r)]
    for s1, s2 in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        off = (s1 * e1 + s2 * e2) * r[:, None]
        parts.append(np.stack([a + off, b + off], axis=1))
    return _join(parts, F, d)


def _curve(k, item, fns, cols, F):
    ends_fn, fn = fns
    ends = _frames(ends_fn(*cols), F)
    u = np.linspace(0.0, 1.0, item.samples)
    s = ends[:, :1] + (ends[:, 1:2] - ends[:, :1]) * u[None, :]          # (F, samples)
    cols2 = [np.asarray(c, dtype=float)[:, None] if np.ndim(c) else c for c in cols]
    vals = [np.broadcast_to(np.asarray(x, dtype=float), s.shape) for x in fn(s, *cols2)]
    xyz = np.stack(vals[:k.dim], axis=2).copy()
    if item.when is not None:       # a gap where a coordinate is NaN: the last one suffices
        xyz[..., -1][vals[k.dim] <= 0] = np.nan      # (a belt's marks keep their x)
    return xyz


def _arrow(k, item, fn, cols, F):
    v = _frames(fn(*cols), F)
    d = k.dim
    at, vec = v[:, :d], v[:, d:] * item.scale
    tip = at + vec
    L = np.linalg.norm(vec, axis=1, keepdims=True)
    unit = vec / np.maximum(L, 1e-300)
    side = np.zeros_like(unit)
    side[:, 0], side[:, 1] = -unit[:, 1], unit[:, 0]
    head = 0.25 * L
    barb1 = tip - head * (np.cos(0.45) * unit + np.sin(0.45) * side)
    barb2 = tip - head * (np.cos(0.45) * unit - np.sin(0.45) * side)
    xyz = np.stack([at, tip, barb1, tip, barb2], axis=1)
    xyz[(L[:, 0] < 1e-12) | ~np.isfinite(L[:, 0])] = np.nan      # no force: no arrow
    return xyz


_DRAW = {c.__name__: f for c, f in ((Segment, _segment), (Sphere, _sphere), (Box, _box),
                                   (Cylinder, _cylinder), (Curve, _curve), (Arrow, _arrow))}


def default_visuals(model) -> Visuals:
    """A model without visuals: its bodies' points (particles, mass centres) marked, each joined
    to the point it was located from (``Point.locatenew``) when that is a body point or the
    fixed origin (the point whose velocity in the frame is zero)."""
    frame = getattr(model, "frame", None)
    bodies = getattr(model, "bodies", None)
    if frame is None or not bodies:
        raise ModelDefinitionError(f"model {model.name!r} keeps no bodies to draw; declare "
                                   "Scenario(visuals=Visuals(...))")
    pts = [b.point if isinstance(b, Particle) else b.masscenter for b in bodies]
    seen, todo = [], list(pts)
    while todo:                       # every point connected to the bodies' points
        p = todo.pop()
        if p not in seen:
            seen.append(p)
            todo.extend(p._pos_dict)
    fixed = [p for p in seen if p._vel_dict.get(frame) == 0]
    origin = fixed[0] if fixed else pts[0]
    keep = pts + [origin]
    items = [Segment(p, b, name=b.name) for b in pts for p in list(b._pos_dict)[:1] if p in keep]
    dim = 3 if any(sp.simplify(p.pos_from(origin).dot(frame.z)) != 0 for p in pts) else 2
    return Visuals(frame, items, origin=origin, points={p.name: p for p in pts}, dim=dim)
