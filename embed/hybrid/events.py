"""Switching conditions watched along a step: which are due, approaching, and where (pure functions).

The hybrid automaton's switching conditions f_{j,i}^{(k)} (gillespie2005 eq 18, Sec 5:
the collision detector) are monitors of the compiled mode, so a step hands over their
values at its start and end.  These functions decide from those values alone, in the
style of scipy's ``integrate._ivp`` event helpers: nothing here touches a simulator.

Each condition is watched in one of three ways (``arm``): ``UNARMED`` (silent until it is
positive), ``ARMED`` (fires when it falls to 0) or ``HELD`` at zero (fires when it falls
below -PROBE_G).  See docs/design.md, "Data flow": the integrator + event locator layer.
"""

from __future__ import annotations

from ..base.errors import EventLocationError
from ..base.tolerances import EVENT_TOL

PROBE = 1e-7          # s: how far ahead a condition left at zero is looked at (arm)
PROBE_G = 1e-9        # a condition this close to zero counts as at zero
UNARMED, ARMED, HELD = 0, 1, 2
LEVEL = {ARMED: 0.0, HELD: -PROBE_G}   # the value at or below which a watched condition fires


def due(g, armed, enabled, level=0.0):
    """The first watched, enabled condition at or below its firing level.

    Parameters
    ----------
    g : sequence of float
        The conditions' values.
    armed, enabled : sequences
        How each is watched (``UNARMED``, ``ARMED``, ``HELD``) and whether it is enabled.
    level : float
        Never fire above this value (``-PROBE_G`` at a communication point or after a reset).

    Returns
    -------
    int or None
        The index of the condition due, else None.
    """
    for i, (v, a, e) in enumerate(zip(g, armed, enabled)):
        if a and e and v <= min(LEVEL[a], level):
            return i
    return None


def approaching(g_prev, g_end, armed, enabled, rehearsed=None, mode=None, steps=1):
    """The armed, enabled condition that, falling as it fell over the last step, crosses
    zero within the next one (within the next ``steps``).

    Parameters
    ----------
    g_prev, g_end : sequence of float
        The conditions at the start and at the end of the last step.
    armed, enabled : sequences
        As for ``due``.
    rehearsed, mode :
        (mode, index) of the condition already looked at (rehearsed), and the mode now: that
        condition is not returned again in that mode.
    steps : int
        How many steps ahead (``embed.hybrid.rehearsal``: parts of a rehearsal paid early).

    Returns
    -------
    int or None
    """
    for i, (a, b, arm_state, on) in enumerate(zip(g_prev, g_end, armed, enabled)):
        if arm_state == ARMED and on and 0.0 < b < a and b <= steps * (a - b) \
                and (mode, i) != rehearsed:
            return i
    return None


def arm(g, later):
    """How each condition is watched at the entry of a mode.

    Positive now: armed (fires when it falls to 0).  At zero or just below (-PROBE_G, 0],
    as a located event leaves the condition that fired, often at exactly 0.0: looked at an
    instant later; positive there (a rebound whose next flight may be shorter than a step)
    it is armed, else it is held at zero: it fires if it falls below -PROBE_G, so a
    condition identically zero (switched off by an input) stays silent, but one that runs
    on through its surface is never missed.  Below -PROBE_G: unarmed until positive.

    Parameters
    ----------
    g : list of float
        The conditions at entry.
    later : callable
        ``later()`` returns the conditions an instant later (called only if one is near zero).

    Returns
    -------
    tuple of int
    """
    near = [-PROBE_G < v <= 0.0 for v in g]
    if not any(near):
        return tuple(ARMED if v > 0 else UNARMED for v in g)
    g2 = later()
    return tuple(ARMED if a > 0 or (n and b > 0) else HELD if n else UNARMED
                 for a, b, n in zip(g, g2, near))


def rearm_after_input(g, armed):
    """How each condition is watched once an input changed its value: an armed one driven
    below -PROBE_G fires at once (the change made it true); one the input brought to zero (a
    latch opened) is held there, and one held at zero that the input drives negative (a
    latch closed with the tip past it) waits until it is positive.

    Parameters
    ----------
    g : list of float
        The conditions after the input changed.
    armed : sequence of int
        How they were watched before.

    Returns
    -------
    tuple of int
    """
    return tuple(
        ARMED if v > 0 else
        UNARMED if a == UNARMED else
        HELD if v > -PROBE_G else
        a if a == ARMED else UNARMED
        for a, v in zip(armed, g))


def locate(g, ga, gb, h, name, t0):
    """Earliest tau in (0, h] where a condition falls to its firing level, bracketed to
    EVENT_TOL by the Illinois variant of regula falsi, on the integrator's continuous
    extension.

    Parameters
    ----------
    g : callable
        ``g(tau)``: the condition minus its firing level a time tau after the step's start.
    ga, gb : float
        The same at the start of the step and at its end h (gb <= 0).
    h : float
        The step's length.
    name, t0 : str, float
        The condition's name and the step's start time (s), for the error.

    Returns
    -------
    float
        tau.

    Raises
    ------
    EventLocationError
        The bracket did not close in 200 iterations.
    """
    a, b = 0.0, h
    if ga <= 0:         # armed at zero by a reset map (see arm): start an instant later
        a = min(PROBE, h / 100)
        ga = g(a)
        if ga <= 0:
            return a
    side = 0
    for _ in range(200):
        if b - a <= EVENT_TOL:
            return b
        c = b - gb * (b - a) / (gb - ga) if gb != ga else 0.5 * (a + b)
        if not (a < c < b):
            c = 0.5 * (a + b)
        c = min(max(c, a + 0.25 * EVENT_TOL), b - 0.25 * EVENT_TOL)
        gc = g(c)
        if gc == 0.0:       # on the crossing itself (else gb = 0 stalls the secant)
            return c
        if gc > 0:
            a, ga = c, gc
            if side == -1:
                gb *= 0.5
            side = -1
        else:
            b, gb = c, gc
            if side == 1:
                ga *= 0.5
            side = 1
    raise EventLocationError(f"switching condition {name!r} not located near t = {t0:.9g} s")
