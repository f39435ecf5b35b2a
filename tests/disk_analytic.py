"""Piecewise analytic solution of the disk on the ramp, independent of the engine.

Newton-Euler for the disk (not Kane, not the embedding): along the ramp
m u1' = -m g sin(phi) - F_f + F_ext, about the centre J q2'' = -r F_f + T_ext with
u2 = r q2', normal force N = m g cos(phi).  Accelerations are constant between
events, so every event time is the root of a polynomial of degree <= 2.  The
switching rules are the paper's (gillespie2005 Sec 6.1), written out again here.
"""

import math

SLIDING, ROLLING = 1, 2


def accelerations(mode, z, s, P, Fe, Te):
    m, J, r, phi, mu, g = (P[k] for k in ("m", "J", "r", "phi", "mu", "g"))
    N = m * g * math.cos(phi)
    if mode == SLIDING:
        Ff = z * mu * s * N
        a1 = (-m * g * math.sin(phi) - Ff + Fe) / m
        a2 = r * (-r * Ff + Te) / J
    else:   # u2' = -u1'
        a1 = (Fe - m * g * math.sin(phi) - Te / r) / (m + J / r ** 2)
        a2 = -a1
        Ff = Te / r + J / r ** 2 * a1
    return a1, a2, Ff, N


def _first_root(a, b, c, eps=1e-13):
    """Smallest tau > eps with a tau^2 + b tau + c = 0."""
    if abs(a) < 1e-300:
        roots = [-c / b] if b != 0 else []
    else:
        d = b * b - 4 * a * c
        if d < 0:
            return math.inf
        sq = math.sqrt(d)
        roots = [(-b - sq) / (2 * a), (-b + sq) / (2 * a)]
    roots = [x for x in roots if x > eps]
    return min(roots) if roots else math.inf


class DiskAnalytic:
    """Event-driven exact solution; ``inputs`` is a list of (time, F_ext, T_ext) changes."""

    def __init__(self, P, t_end, inputs=((0.0, 0.0, 0.0),)):
        self.P = P
        self.events = []           # (t, kind, new mode)
        self.phases = []           # (t0, t1, state dict at t0, a1, a2)
        sched = sorted(inputs)
        t, q1, q2 = 0.0, P["q1_start"], P["q2_start"]
        u1, u2 = P["u1_start"], P["u2_start"]
        Fe, Te = sched[0][1], sched[0][2]
        k_in = 1
        L, mu, r = P["L"], P["mu"], P["r"]
        z = 1 if q1 < L else 0
        mode, s = self._start(q1, u1, u2, z, Fe, Te)
        while t < t_end:
            a1, a2, Ff, N = accelerations(mode, z, s, P, Fe, Te)
            slip = u1 + u2
            cands = []
            if mode == SLIDING and z == 1 and s * slip > 0:
                cands.append((_first_root(0, a1 + a2, slip), "rolling_constraint_satisfied"))
            if z == 1:
                cands.append((_first_root(a1 / 2, u1, q1 - L), "zone_boundary"))
            else:
                cands.append((_first_root(a1 / 2, u1, q1 - L), "zone_boundary"))
            t_in = sched[k_in][0] - t if k_in < len(sched) else math.inf
            cands.append((t_in, "input"))
            cands.append((t_end - t, "end"))
            tau, kind = min(cands)
            self.phases.append((t, t + tau, dict(q1=q1, q2=q2, u1=u1, u2=u2, mode=mode), a1, a2))
            q1 += u1 * tau + a1 * tau ** 2 / 2
            q2 += (u2 * tau + a2 * tau ** 2 / 2) / r
            u1 += a1 * tau
            u2 += a2 * tau
            t += tau
            if kind == "end":
                break
            if kind == "input":
                Fe, Te = sched[k_in][1], sched[k_in][2]
                k_in += 1
                if mode == ROLLING:
                    _, _, Ffr, Nr = accelerations(ROLLING, z, s, P, Fe, Te)
                    if abs(Ffr) > mu * Nr:
                        mode, s = SLIDING, math.copysign(1.0, Ffr)
                        self.events.append((t, "friction_cone", mode))
                continue
            if kind == "rolling_constraint_satisfied":
                u2 = -u1
                mode, s = self._try_rolling(Fe, Te)
            elif kind == "zone_boundary":
                if mode == ROLLING or z == 1:
                    z, mode = 0, SLIDING
                else:
                    z, s = 1, math.copysign(1.0, u1 + u2)
            self.events.append((t, kind, mode))

    def _try_rolling(self, Fe, Te):
        _, _, Ff, N = accelerations(ROLLING, 1, 1, self.P, Fe, Te)
        if abs(Ff) <= self.P["mu"] * N:
            return ROLLING, 1.0
        return SLIDING, math.copysign(1.0, Ff)

    def _start(self, q1, u1, u2, z, Fe, Te):
        if u1 + u2 != 0 or z == 0:
            return SLIDING, math.copysign(1.0, u1 + u2)
        return self._try_rolling(Fe, Te)

    def state(self, t):
        """q1, q2, u1, u2 and mode at time t (the state after any event at exactly t)."""
        for t0, t1, st, a1, a2 in self.phases:
            if t0 <= t <= t1 or t1 == self.phases[-1][1]:
                tau = t - t0
                return dict(q1=st["q1"] + st["u1"] * tau + a1 * tau ** 2 / 2,
                            q2=st["q2"] + (st["u2"] * tau + a2 * tau ** 2 / 2) / self.P["r"],
                            u1=st["u1"] + a1 * tau, u2=st["u2"] + a2 * tau, mode=st["mode"])
        raise ValueError(t)
