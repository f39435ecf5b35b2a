"""Integrators for one mode: fixed-step RK4 and adaptive Dormand-Prince 5(4).

Both return the compiled mode's output vector at the new state
(``[x..., monitors..., finiteness check]``, see ``embed.modes.modes``), and both offer
``partial(mode, t, x, p, tau)``: the same at the state a step of length tau from x would
reach.  RK4 is the mode's own step (``rk4``: ``modes.rk4_scheme``, composed or stage by
stage); Dormand-Prince evaluates the mode's ``rhs`` and asks it for ``output_at`` the new
state.  See docs/design.md, "Data flow": the integrator + event locator layer.  That continuous extension (of the integrator's own order) is the dense
output on which switching conditions are located.
"""

from __future__ import annotations

import math

import numpy as np

from ..base.errors import InputError, IntegrationError
from ..base.tolerances import GRID_TOL




class RK4:
    """Classical fourth-order Runge-Kutta with fixed steps of at most h_max (the real-time choice).

    The steps end on the grid t0 + k h_max, t0 the start of the run (``restart``), each grid
    point formed by one multiplication, not by adding steps up: where the master's
    communication points fall on the grid, the steps (and so the answer) do not depend on
    how the master slices the run; a communication point or an event off the grid ends a
    step there and the next step returns to the grid."""

    name = "rk4"
    uses_rhs = False      # steps through the compiled mode's composed RK4 step

    def __init__(self, h_max=1e-3):
        self.h_max = float(h_max)
        self.t0 = 0.0
        self.t_next = 0.0  # where the last step ended (exactly a grid point when it is one)

    def restart(self, t):
        """A new grid from t (the run starts)."""
        self.t0 = float(t)

    def steps_needed(self, t, t_end):
        return math.ceil((t_end - t) / self.h_max - 1e-9)

    def step(self, mode, t, x, p, h_avail):
        t_end, hm, t0 = t + h_avail, self.h_max, self.t0
        k = math.floor((t - t0) / hm + 1e-9) + 1     # the first grid point after t ...
        t_next = t0 + k * hm
        if t_next - t <= GRID_TOL:                  # ... not t itself
            t_next = t0 + (k + 1) * hm
        if t_end < t_next - GRID_TOL:               # a communication point off the grid
            t_next = t_end
        h = t_next - t
        self.t_next = t_next
        return h, mode.rk4(t, h, x, p)

    def partial(self, mode, t, x, p, tau):
        return mode.rk4(t, tau, x, p)

    def get_state(self):
        return {"t0": self.t0}

    def set_state(self, s):
        self.t0 = float(s.get("t0", 0.0))


# Dormand-Prince 5(4) tableau (Hairer, Norsett, Wanner, Table II.5.2)
_C = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1])
_A = [[],
      [1 / 5],
      [3 / 40, 9 / 40],
      [44 / 45, -56 / 15, 32 / 9],
      [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
      [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
      [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]]
_B5 = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
_B4 = np.array([5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40])


class DormandPrince:
    """Adaptive embedded Runge-Kutta 5(4) with error control (rtol, atol) and h <= h_max."""

    name = "adaptive"
    uses_rhs = True       # evaluates the right-hand side stage by stage

    def __init__(self, h_max=1e-3, rtol=1e-8, atol=None):
        self.h_max = float(h_max)
        self.rtol = float(rtol)
        self.atol = float(atol if atol is not None else rtol * 1e-2)
        self.h = self.h_max
        self.t_next = 0.0  # where the last step ended

    def _dp(self, mode, t, x, p, h):
        k = np.empty((7, x.size))
        k[0] = mode.rhs(t, x, p)
        for i in range(1, 7):
            xi = x + h * (np.dot(_A[i], k[:i]) if i else 0)
            k[i] = mode.rhs(t + _C[i] * h, xi, p)
        x5 = x + h * (_B5 @ k)
        err = h * ((_B5 - _B4) @ k)
        return x5, err

    def restart(self, t):
        pass

    def steps_needed(self, t, t_end):
        """A lower bound: no step is longer than h_max."""
        return math.ceil((t_end - t) / self.h_max - 1e-9)

    def step(self, mode, t, x, p, h_avail):
        h = min(self.h, self.h_max, h_avail)
        cut = h == h_avail < min(self.h, self.h_max)   # cut short by a communication point
        for _ in range(60):
            x5, err = self._dp(mode, t, x, p, h)
            scale = self.atol + self.rtol * np.maximum(np.abs(x), np.abs(x5))
            en = float(np.sqrt(np.mean((err / scale) ** 2))) if x.size else 0.0
            if not np.isfinite(en):
                en = 1e10
            if en <= 1.0:
                fac = 5.0 if en == 0 else min(5.0, 0.9 * en ** -0.2)
                if not cut:     # a step cut short says nothing about the step size to take
                    self.h = min(self.h_max, h * fac)
                self.t_next = t + h
                return h, mode.output_at(t + h, x5, p)
            cut = False
            h *= max(0.1, 0.9 * en ** -0.2)
            if h < 1e-14:
                break
        raise IntegrationError(
            f"adaptive step size fell below 1e-14 s at t = {t:.9g} s in mode {mode.key}; "
            "loosen rtol or check the inputs for non-finite values")

    def partial(self, mode, t, x, p, tau):
        x5, _ = self._dp(mode, t, x, p, tau)
        return mode.output_at(t + tau, x5, p)

    def get_state(self):
        return {"h": self.h}

    def set_state(self, s):
        self.h = float(s.get("h", self.h_max))


def make_integrator(solver: str, h_max: float, rtol: float):
    """The integrator named ``solver``.

    Parameters
    ----------
    solver : str
        "rk4" (fixed steps on the grid t0 + k h_max) or "adaptive" (Dormand-Prince 5(4)).
    h_max : float
        The longest step (s), finite and > 0.
    rtol : float
        The adaptive solver's relative tolerance, finite and > 0.

    Returns
    -------
    RK4 or DormandPrince

    Raises
    ------
    InputError
        An unknown solver or a bad h_max or rtol.
    """
    h_max, rtol = float(h_max), float(rtol)
    if not (math.isfinite(h_max) and h_max > 0):
        raise InputError(f"h_max = {h_max!r} must be a finite step length > 0 s")
    if not (math.isfinite(rtol) and rtol > 0):
        raise InputError(f"rtol = {rtol!r} must be finite and > 0")
    if solver == "rk4":
        return RK4(h_max)
    if solver == "adaptive":
        return DormandPrince(h_max, rtol)
    raise InputError(f"unknown solver {solver!r}; use 'rk4' or 'adaptive'")

