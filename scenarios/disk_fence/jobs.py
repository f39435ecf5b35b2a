"""The background jobs of the run-time fence, run in the fast worker (``embed.background.worker`` loads them
by the names below, given on its command line): an announced fence checked, differentiated
and prepared for the slow worker's embedding (gillespie2005 Sec 6.2, Fig 11).
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

from embed import holonomic
from embed.background.worker_pipe import Relay
from embed.base.lazy import LazyModule
from embed.codegen import native

from . import checks
from .announce import check_length, profile_of
from .checks import time_limit, validate
from .family import worker_jet
from .modes import FENCE_BASE, POLY, fence_mode, next_uid, poly_coefficients
from .profile import GeometryError

sp = LazyModule("sympy")                      # imported at the first use (issue 30)
SYM = LazyModule(__package__ + ".symbolic")   # the package's symbols (POLY_C)

# the worker's names of the jobs (module:function; ``__name__`` is the package's name in an FMU)
PREPARE_FENCE = f"{__name__}:prepare_fence"
SET_UP_WORKER = f"{__name__}:set_up_worker"


def prepare_fence(forms, version, spec, pvec, rhs=False, uid=None):
    """Background work for fence ``version`` (gillespie2005 Sec 6.2, Fig 11), run in the fast
    worker: check the geometry (with a time limit); a cubic polynomial only sets the compiled
    family's coefficients; any other profile gets its jet, all the fence of any profile needs
    to step it at once (``install_profile``: "terms"), then its own constraints and mode, and
    the frames that ask the slow worker for their symbolic embedding, composed into one RK4
    step (seven times cheaper a step than the family's, which evaluates the jet stage by
    stage), at the partition expected where the fence begins ("embed"; with its right-hand
    side alone if ``rhs``: the adaptive solver).  ``uid``
    numbers the fence (the stepping process's, whose caches outlive a worker).  Yields the
    answers, each sent as one frame (the slow worker's requests as a ``Relay``).

    Parameters
    ----------
    forms : embed.modes.forming.AutomatonForms
        the worker's symbolic forms of disk_fence's automaton.
    version : int
        the announcement's fence_version.
    spec : tuple
        ("arc", R, L_f) or ("curve", text, L_f).
    pvec : numpy.ndarray or list of float
        the stepping simulator's parameter vector (a list from the stepping process: a
        request pickles in 2 us with it, in 10-60 us with an array; the same floats).
    rhs : bool
        also compile the right-hand side alone (the adaptive solver).
    uid : int, optional
        the fence's number (``modes.fence_uid``).

    Yields
    ------
    ("rejected", version, code, message); ("ready", version, POLY, discrete values);
    ("terms", version, uid, L_f, jet: ``family.worker_jet``); a Relay carrying ("embed", version, key).
    """
    pvec = np.asarray(pvec, dtype=np.float64)
    try:
        with time_limit():               # in the worker: GEOMETRY_TIMEOUT after 2 s
            check_length(spec[2])
            profile = profile_of(spec)
            validate(profile, spec[2], disk_radius=float(pvec[forms.pnames.index("r")]))
    except GeometryError as exc:
        yield ("rejected", version, exc.code, str(exc))
        return
    coeffs = poly_coefficients(profile)
    if coeffs is not None:               # a member of the compiled polynomial family
        yield ("ready", version, POLY, {**{str(c): v for c, v in zip(SYM.POLY_C, coeffs)},
                                        "Lf_poly": float(spec[2])})
        return
    uid = next_uid() if uid is None else uid
    yield ("terms", version, uid, float(spec[2]), worker_jet(profile))
    if profile.h.has(sp.Abs) or FENCE_BASE + uid in forms.automaton.modes:
        return      # abs(): the family's embedding only (fence_mode); or embedded already
    cons, mode = fence_mode(uid, profile, spec[2])
    for name, phi in cons.items():
        forms.add_constraint(holonomic(forms.model, name, phi))
    forms.add_mode(mode)
    # the symbolic embedding, for the partition at the start of the fence, is the slow
    # worker's: these requests go to it directly, never through the stepping process
    L, ph, r = (float(pvec[forms.pnames.index(k)]) for k in ("L", "phi", "r"))
    q = np.array([L * math.cos(ph) - r * math.sin(ph), L * math.sin(ph) + r * math.cos(ph), 0, L])
    active = tuple(sorted(mode.constraints))
    key = (mode.id, active, forms.partition(active, 0.0, q, pvec))
    yield Relay([("constraint", forms.automaton.constraints[c]) for c in cons]
                + [("modedef", mode),
                   ("mode", key, {"entry": False, "compose_ops": COMPOSE_OPS, "rhs": rhs})],
                ("embed", version, key))


# a fence's monitors go into its composed RK4 step, whatever their size: one LLVM function
# to load instead of two (the compile costs the same either way for the profiles of the
# tests: docs/design.md, facts); its entry terms are the family's (install_profile), not the worker's
COMPOSE_OPS = 10 ** 6


def set_up_worker(forms, pvec):
    """Prepare a worker process for fence jobs (``embed.background.worker`` runs it once, before the
    first request): the checks' time limit ($EMBED_CHECK_TIME_LIMIT, 2 s), and the geometry
    path run once, since the first parse, checks and LLVM compile of a process cost several
    ms more than later ones.

    Parameters
    ----------
    forms : embed.modes.forming.AutomatonForms
        the worker's symbolic forms of disk_fence's automaton.
    pvec : numpy.ndarray
        the default parameter vector.
    """
    checks.CHECK_TIME_LIMIT = float(os.environ.get("EMBED_CHECK_TIME_LIMIT", "2.0"))
    # LLVM set up (about 0.2 s: ``native.set_up``) for the first large fence's jet
    # (``family.worker_jet``), in a thread: the worker says it is ready meanwhile
    threading.Thread(target=native.set_up, args=(False,), name="embed-llvm-setup",
                     daemon=True).start()
    for part in prepare_fence(forms, 0, ("curve", "0.01*s**2*(1 + 0.1*sin(s))", 6.7), pvec,
                              uid=0):     # the stepping process numbers its fences from 1
        pass
