"""Announcing a fence to a simulator in the stepping process: the checks an announcement gets
there, and the discrete variables that select the fence the disk meets at the ramp's end
(gillespie2005 Sec 6.2: the geometry changes while the simulation runs).
"""

from __future__ import annotations

import math

from embed import holonomic

from . import points
from .modes import ARC, FENCE, FENCE_BASE, POLY, fence_mode, next_uid
from .profile import GEOMETRY_BAD_PARAMETER, GEOMETRY_ON_FENCE, FenceProfile, GeometryError

def announce(sim, profile, L_f):
    """Make a fence known to a simulator now (its constraints and mode, embedded when first
    entered); the disk uses it from the next time it reaches the ramp's end (refused while
    it rolls on a fence: ``activate``).

    Parameters
    ----------
    sim : embed.hybrid.simulator.Simulator
    profile : FenceProfile
        checked already (``checks.validate``).
    L_f : float

    Returns
    -------
    the fence's Mode.
    """
    check_not_on_fence(sim)
    cons, mode = fence_mode(next_uid(), profile, L_f)
    for name, phi in cons.items():
        sim.add_constraint(holonomic(sim.model, name, phi))
    sim.add_mode(mode)
    activate(sim, mode.id)
    return mode


def activate(sim, mode_id, **discrete):
    """Use fence mode ``mode_id`` from now on: the disk meets it at the ramp's end.  Refused
    (GeometryError GEOMETRY_ON_FENCE, nothing changed) while the disk rolls on a fence: the
    new fence passes elsewhere, and putting the disk on it would move the body (issue 33).

    Parameters
    ----------
    sim : embed.hybrid.simulator.Simulator
    mode_id : int
        ARC, POLY or FENCE_BASE + a fence's number.
    **discrete : float
        the family's discrete variables (R_arc, Lf_arc; c2_poly, c3_poly, Lf_poly).
    """
    check_not_on_fence(sim)
    sim.set_discrete({
        **discrete, "fence": {ARC: -1.0, POLY: -2.0}.get(mode_id, float(mode_id - FENCE_BASE))})


def check_not_on_fence(sim):
    """GeometryError(GEOMETRY_ON_FENCE) if the disk rolls on a fence now."""
    current = sim.active_mode
    if current is not None and current.report == FENCE:
        raise GeometryError(
            f"a new fence cannot be entered while the disk rolls on the fence in use (mode "
            f"{sim.mode}, q4 = {sim.q[3]:.6g} m at t = {sim.t:.6g} s): it would move the disk; "
            "announce it again once the disk has left the fence", code=GEOMETRY_ON_FENCE,
            check="on_fence", value=sim.mode)


def check_arc(R, L_f, r):
    """The arc's own checks (the parser's are not needed): R > r finite, 0 < L_f < R."""
    check_length(L_f)
    if not (isinstance(R, (int, float)) and math.isfinite(R) and R > r):
        raise GeometryError(f"fence_radius = {R!r} must be finite and larger than the disk "
                            f"radius {r}", code=GEOMETRY_BAD_PARAMETER, check="radius", value=R)
    if L_f >= R:
        raise GeometryError(f"fence_length = {L_f} must be below fence_radius = {R} (the arc "
                            "is a height profile: less than a quarter turn)",
                            code=GEOMETRY_BAD_PARAMETER, check="length", value=L_f)


def announce_arc(sim, R, L_f):
    """An arc fence (the parameterized family, compiled already): ready at once.

    Parameters
    ----------
    sim : embed.hybrid.simulator.Simulator
    R : float
        the arc's radius (fence_radius), larger than the disk's.
    L_f : float
        its length along the ramp line (fence_length), below R.

    Raises GeometryError (code 7) and changes nothing if either is bad.
    """
    check_arc(R, L_f, sim.param("r"))
    check_not_on_fence(sim)
    activate(sim, ARC, R_arc=float(R), Lf_arc=float(L_f))


def profile_of(spec):
    """FenceProfile of an announcement: ("arc", R, L_f), ("curve", text, L_f) or ("points",
    description, L_f) (FMI 3.0's array, ``points.description``)."""
    kind, value, L_f = spec
    if kind == "points":
        return points.profile(points.from_description(value))
    return FenceProfile.arc(value) if kind == "arc" else FenceProfile.from_text(value)


def check_length(L_f):
    """GeometryError(GEOMETRY_BAD_PARAMETER) unless the fence length is positive and finite."""
    if not (isinstance(L_f, (int, float)) and math.isfinite(L_f) and L_f > 0):
        raise GeometryError(f"fence_length = {L_f!r} must be a positive finite number",
                            code=GEOMETRY_BAD_PARAMETER, check="length", value=L_f)
