"""The projection of a step the loader's fast path took (issue 30, "Python only on events"):
fmu_src/runtime/loader/fast_step.c calls back into Python for ``switching.after_step``'s
configuration projection (haug_pavesic2023 eq 13-16, ``Projection.project``) and goes on in C,
instead of giving the whole communication step to Python (slider_crank3: 1995 of 2000 doSteps
in C, 1914 before; on a fence, every 50-100 ms, the projection called back took 0.45-1.5 ms
of CPU under cProfile, its Python cold after C steps: docs/design.md, stop 44's facts).

The state is not changed here: the step's y is projected in place (the loader's buffer), and
the chart the projection leaves is kept aside, in ``charts``, until the loader syncs the
steps it took (``FastStep.sync`` commits the charts of those steps; a later step's, given to
Python whole, is dropped).  The same operations as ``switching.after_step`` on the same
values: the same bits (tests/test_fast_step.py, slider_crank3's closed loop).
"""

from __future__ import annotations

import ctypes

import numpy as np

from embed.hybrid import switching
from embed.hybrid.after_step import nothing, watch_only
from embed.hybrid.switching import RESELECT


def after_step_tests(sim):
    """(i_res, i_kappa, kappa_max): the indices into the record's y = [x, monitors] of the
    monitors whose thresholds make ``sim.after_step`` act (-1: it never tests it), and the
    re-selection's threshold, as ``switching.after_step`` and ``after_step.watch_only`` test
    them (the configuration projected where the residual exceeds PHI_TOL, the speeds
    re-selected where kappa(B1) exceeds RESELECT max(kappa0, 1)); None for a formulation's
    hook that acts at every step."""
    st, m, hook = sim.state, sim.state.compiled_mode, sim.after_step
    if sim.after_every_step or hook not in (switching.after_step, watch_only, nothing):
        return None
    project = st.projection.holonomic and hook is switching.after_step
    watch = st.watch and hook is not nothing
    return (m.nx + m.i_res if project else -1, m.nx + m.i_kappa if watch else -1,
            RESELECT * max(st.kappa0, 1.0) if watch else 0.0)


class Projector:
    """The projection callback's state: the charts kept aside (``charts``: (chart, recharts) of
    each projection since the last sync) and numpy views of the loader's scratch buffers
    (``views``: address -> array, made with the record's buffers: no array made in the
    callback, whose Python runs cold after C steps)."""

    __slots__ = ("charts", "views")

    def __init__(self):
        self.charts, self.views = [], {}

    def commit(self, st, k):
        """The charts of the ``k`` projected steps the loader took into the state (the last
        chart, the recharts counted); the rest (a step given to Python whole) dropped."""
        if k:
            st.chart = self.charts[k - 1][0]
            st.recharts += sum(r for _, r in self.charts[:k])
        self.charts.clear()

    def __call__(self, slave, rec, t, address):
        """Project y = [x..., monitors..., sum |x|] (the loader's buffer at ``address``) at
        time t as ``switching.after_step`` does, the chart taken from the last of ``charts``
        (this communication step's, or a step's not synced yet) or the state's; append
        (chart, recharts).  The charts of the steps taken (``rec.projected`` of them) are
        folded into one first (the last chart, the recharts summed): the list stays short
        however long C steps without a sync.  Returns 1, or 0 where Python's step must do it
        (it raised: the error is Python's to report)."""
        charts = self.charts
        try:
            if rec.projected > 1:
                k = rec.projected
                charts[:k] = [(charts[k - 1][0], sum(r for _, r in charts[:k]))]
                rec.projected = 1
            sim = slave.sim
            st = sim.state
            m, n = st.compiled_mode, sim.model.n
            nx = m.nx
            y = self.views.get(address)
            if y is None:
                y = np.frombuffer((ctypes.c_double * (nx + m.n_mon + 1)).from_address(address))
            q = y[:n].copy()
            chart = charts[-1][0] if charts else st.chart
            qp, chart, recharts = st.projection.project(t, q, st.pvec, chart)
            if qp is not q:
                x = np.concatenate((qp, y[n:nx]))
                mon = m.monitors(t, x, st.pvec)
                y[:nx] = x
                y[nx:-1] = mon
            charts.append((chart, recharts))
            return 1
        except Exception:  # noqa: BLE001 - a ctypes callback: nothing may escape
            return 0
