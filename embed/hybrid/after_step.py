"""What the simulator does after an accepted step, per formulation (``embed.modes.formulations``):
the engine's own configuration projection and re-selection watch (``switching.after_step``, Sec
5.4) for ``embedding``, the watch alone without configuration projection, braun_goldfarb2012's
correction (eq 3-4) for ``projection``, nothing for ``multipliers`` and ``soft``."""

from __future__ import annotations

from ..modes.formulations import Formulation
from . import switching
from .switching import RESELECT, reselect


def after_step_for(form: Formulation):
    """What the simulator does after an accepted step under ``form``: the engine's own
    (``switching.after_step``) for ``embedding``; the re-selection watch alone for
    ``embedding`` without configuration projection; braun_goldfarb2012's correction for
    ``projection``; nothing for ``multipliers`` and ``soft``.  Returns (function of the
    simulator, whether to call it even where no constraint is holonomic or watched)."""
    if form.name == "embedding":
        return (switching.after_step if form.configuration_projection else watch_only), False
    if form.name == "projection":
        return _correct, True
    return nothing, False


def nothing(sim):
    """No step hook (``multipliers``, ``soft``)."""
    return None


def watch_only(sim):
    """``switching.after_step`` without the configuration projection (Sec 5.4 watch only)."""
    st = sim.state
    if st.watch and st.mon[st.compiled_mode.i_kappa] > RESELECT * max(st.kappa0, 1.0):
        reselect(sim)


def _correct(sim):
    """braun_goldfarb2012 eq 3-4 after the step (``FullStateMode.correct``)."""
    st = sim.state
    compiled = st.compiled_mode
    if not st.active or st.mon[compiled.i_res] <= compiled.form.projection_tol:
        return
    x = compiled.correct(st.t, st.x, st.pvec)
    if x is not st.x:
        st.x = x
        st.mon = compiled.monitors(st.t, x, st.pvec)
