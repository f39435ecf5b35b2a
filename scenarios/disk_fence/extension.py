"""disk_fence's run-time fence as FMU variables: the inputs fence_radius, fence_length,
fence_version and fence_curve announce a fence, the outputs report it (``FenceGeometry``,
the scenario's ``extension``, which the FMU's slave calls before every step and for the FMU
state; it knows nothing of FMI).

What this class does with an announcement: an arc sets the compiled arc family's discrete
variables at once (``scenarios.disk_fence.announce.announce_arc``); any other text goes to the fast
background worker (``scenarios.disk_fence.jobs.prepare_fence``), whose answers are installed one a
step (``scenarios.disk_fence.family.install_profile``, ``announce.activate``).  gillespie2005 Sec
6.2, Fig 11; issue 4.

Offline (the client's ``real_time`` False) every answer of an announcement is waited for in the
step that announces it, so the run is the same whatever the master's pace (issue 33); a
real-time master steps on, and ``answers_late`` and the log say when the disk left the ramp's
end while its fence was still on the way.  An announcement the workers never answer is
rejected (geometry_status 10), one made while the disk rolls on a fence too (9).
"""

from __future__ import annotations

import collections
import time

import numpy as np

from embed import Var
from embed.codegen.native import run_later

from . import jobs, points
from .announce import activate, announce_arc, check_length, check_not_on_fence, profile_of
from .checks import validate
from .family import (install_prepared, install_profile, jet_function, prepare_profile,
                     profile_family, profile_family_modes)
from .modes import ARC, FENCE, FENCE_BASE, fence_uid
from .profile import GEOMETRY_NO_ANSWER, FenceProfile, GeometryError

# the FMU inputs and outputs of the run-time fence, served by FenceGeometry
FENCE_INPUTS = [
    Var("fence_radius", 10.0, "radius R of the arc fence (used when fence_curve is empty)",
        "m"),
    Var("fence_length", 6.7, "extent of the fence along the ramp direction beyond P", "m"),
    Var("fence_version", 0, "bump to announce the fence described by the other inputs",
        type="Integer"),
    Var("fence_curve", "", "fence height profile h(s) over the ramp line (s from P); empty: "
        "the arc of radius fence_radius", type="String"),
]
# FMI 3.0 only (fmu_src/runtime/arrays.py: variable, shape): the fence as points of its height
# profile, the cubic spline through them (``points``); used at an announcement when the count is
# not 0, in place of fence_curve and fence_radius, the fence ending at the last point
FENCE_ARRAYS = [
    (Var("fence_points", 0.0, "points (s, h) of the fence's height profile beyond P, rows in "
         "increasing s > 0; the first fence_point_count rows are used", "m"), (points.N_MAX, 2)),
    (Var("fence_point_count", 0, "rows of fence_points that make the fence announced by "
         "fence_version (the cubic spline through P and them); 0: fence_curve or the arc",
         type="Integer", min=0, max=points.N_MAX), ()),
]
FENCE_OUTPUTS = [
    Var("geometry_status", 0, "0 ok; otherwise the geometry code of the last rejected "
        "announcement (1 syntax, 2 not allowed, 3 not finite, 4 not tangent at P, "
        "5 not smooth, 6 curvature, 7 bad radius or length, 8 checks too slow, 9 announced while "
        "the disk rolls on a fence, 10 the background workers never answered)", type="Integer"),
    Var("embed_pending", 0.0, "an announced fence is being embedded", type="Boolean"),
    Var("embed_latency", 0.0, "wall seconds from the last accepted announcement to its "
        "fence mode being ready", "s"),
    Var("geometry_version_active", 0, "the fence version in use", type="Integer"),
    Var("answers_late", 0, "real_time only: times the disk left the ramp's end (into the air "
        "or onto an older fence) while an announced fence was still being prepared (an offline "
        "run waits and meets it)",
        type="Integer"),
]


class FenceGeometry:
    """The fence inputs of disk_fence.fmu (issue 4): announcements by fence_version, checked
    and differentiated in the fast background worker while the stepping goes on, the fence
    then stepped on the family's embedding, and on its own composed mode once the slow
    worker has it; answers installed one a step.

    Parameters
    ----------
    sim : embed.hybrid.simulator.Simulator
        the instance's simulator.
    compiler : embed.background.client.BackgroundCompiler or None
        the instance's client of the background workers; None: everything in this process
        (the ``symbolic`` and ``numeric`` embeddings).
    log : callable
        log(message): a warning through the FMI logger.
    """

    inputs = FENCE_INPUTS
    outputs = FENCE_OUTPUTS
    arrays = FENCE_ARRAYS

    def __init__(self, sim, compiler, log):
        self.sim, self.compiler, self.log = sim, compiler, log
        self.values = {"geometry_status": 0, "embed_pending": 0.0, "embed_latency": 0.0,
                       "geometry_version_active": 0, "answers_late": 0}
        self._over_ramp = True    # over the ramp at the start of the last step
        self.requested = 0        # the newest version announced
        self.resolved = 0         # the newest version accepted or rejected: older answers
        #                           arriving later are dropped (never replace a newer fence)
        self.t_request = {}       # version -> when it was announced (perf_counter)
        self.texts = {}           # version -> fence_curve of announcements under way
        self.fences = []          # [uid, text, L_f] of the free-form fences installed
        self.parts = collections.deque()  # real time: answers not installed yet, in order
        self.preparing = None     # (part, Done of prepare_profile) of the next "terms"
        # compiled now (LLVM, tens of ms each), not in a step, and each called once: the
        # first call of an LLVM function costs more than later ones (warm_up does the same
        # for the automaton's modes, in a real-time run: an offline one, which has no
        # deadline, pays each first call, and the placement of shipped code, at its first
        # fence, issue 30; a real-time run places all shipped code at its initialization,
        # ``simulation.initialize``, where an instance without a client has it called)
        fn, _, _, entry = profile_family(sim)
        family = profile_family_modes(sim)
        if getattr(compiler, "real_time", False):
            for f in [fn, entry.fn] + [g for _, *fs in family.values() for g in fs]:
                f(np.full(f.n_in, 0.5))

    def get(self, name):
        """The value of output ``name`` (one of FENCE_OUTPUTS)."""
        return self.values[name]

    def idle(self, inputs):
        """Whether ``before_step(inputs)`` would do nothing (the extension protocol,
        ``Scenario.extension``): no new version announced in ``inputs`` (FENCE_INPUTS), none
        outstanding (requested == resolved), no answer queued or preparing.  Its outputs then
        stay as they are until its next call (they are written only in ``before_step`` and
        ``set_state``), and a step may run without calling it (the FMU's C loader,
        fmu_src/runtime/fast_step.py): all it would do is refresh ``_over_ramp``, from the
        discrete state and the mode, which change only at events (Python's steps, which call
        it again first), and which counts ``answers_late`` only while an announcement is
        outstanding.  The background compiler's idleness is the slave's to check
        (``BackgroundCompiler.idle``)."""
        return (int(inputs["fence_version"]) <= self.requested == self.resolved
                and not self.parts and self.preparing is None)

    def state(self):
        """What of the fence decides the future, for the FMU state: the outputs, the newest
        versions announced and decided, and the free-form fences installed ([uid, text,
        L_f]: enough to install them again elsewhere)."""
        return {"values": dict(self.values), "requested": self.requested,
                "resolved": self.resolved,
                "fences": [list(f) for f in self.fences]}

    def set_state(self, s):
        """Restore; a free-form fence the state uses and this process has not installed (a
        serialized state restored elsewhere) is parsed, checked and installed again."""
        for uid, text, L_f in s.get("fences", []):
            if FENCE_BASE + int(uid) not in self.sim.automaton.modes:
                profile = (points.profile(points.from_description(text))
                           if text.startswith(points.PREFIX) else FenceProfile.from_text(text))
                validate(profile, L_f, disk_radius=self.sim.param("r"))
                install_profile(self.sim, int(uid), float(L_f), jet_function(profile))
                self.fences.append([int(uid), text, float(L_f)])
        self.values.update(s["values"])
        self._over_ramp = False           # the restored step did not start over the ramp
        self.requested = s["requested"]
        self.resolved = s.get("resolved", self.requested)
        self.values["embed_pending"] = float(self.requested > self.resolved)

    def before_step(self, inputs):
        """Announce a new version; install what the worker has finished.

        Parameters
        ----------
        inputs : dict
            the values of FENCE_INPUTS at the start of the step.
        """
        self._late()
        v = int(inputs["fence_version"])
        if v > self.requested:
            self.requested = v
            text = str(inputs["fence_curve"]).strip()
            spec = (("curve", text, float(inputs["fence_length"])) if text else
                    ("arc", float(inputs["fence_radius"]), float(inputs["fence_length"])))
            self.t_request[v] = time.perf_counter()
            self.values["embed_pending"] = 1.0
            try:
                if inputs.get("fence_point_count"):     # FMI 3.0's array: ends at its last point
                    rows = points.check(points.from_rows(inputs["fence_points"],
                                                         inputs["fence_point_count"]))
                    text = points.description(rows)
                    spec = ("points", text, rows[-1][0])
                check_length(spec[2])
                check_not_on_fence(self.sim)
                if spec[0] == "arc":        # the compiled arc family: ready at once
                    announce_arc(self.sim, spec[1], spec[2])
                    self._install(("ready", v, ARC, {}), arc=True)
                    return
                if self.compiler is None:
                    profile_of(spec)                # parse here (a whitelist, no eval); with a
                    # worker the parse and every check run there, off the stepping path
            except GeometryError as exc:
                self._install(("rejected", v, exc.code, str(exc)))
                return
            self.texts[v] = text
            uid = fence_uid(text, spec[2])
            if self.compiler is not None:
                # a later announcement waiting in the worker replaces this one there
                self.compiler.call(jobs.PREPARE_FENCE, v, spec, self.sim.pvec.tolist(),
                                   self.sim.integrator.uses_rhs, uid, supersede="fence")
                if not self.compiler.real_time:     # offline: its answers now, at any pace
                    self.compiler.wait()
                    for _, part in self.compiler.call_results():
                        self._install(part)
            else:
                # the first answer only: in this process the family's embedding serves the
                # fence; its own symbolic embedding (the rest) is for the slow worker
                self._install(next(jobs.prepare_fence(self.sim, v, spec,
                                                      np.array(self.sim.pvec), uid=uid)))
        if self.compiler is not None:
            self._unanswered()
            # the answers the simulator's poll decoded in earlier steps, in order
            self.parts.extend(part for _, part in self.compiler.call_results())
            self._install_parts()

    def _install_parts(self):
        """Real time: install the answers in order, a fence's terms once the loader thread
        has made them (``prepare_profile``: off the stepping path) and one a step (a step that
        installs them decodes no more: ``rest``)."""
        while self.parts:
            part = self.parts[0]
            if part[0] != "terms" or part[1] <= self.resolved or not self.compiler.real_time:
                self.parts.popleft()
                self._install(part)     # (offline: at once; a decided version's: dropped)
                continue
            if self.preparing is None or self.preparing[0] is not part:
                _, version, uid, L_f, jet = part
                self.preparing = (part, run_later(
                    lambda: prepare_profile(self.sim, uid, L_f, jet)))
            fut = self.preparing[1]
            if not fut.done():
                return
            self.parts.popleft()
            self.preparing = None
            # a prepare that failed: made again here, to raise as an offline run does
            self._install_terms(part, None if fut.exception() else fut.result())
            self.compiler.rest()
            return

    def _late(self):
        """Real time: count and log the disk leaving the ramp's end (last step: into the air,
        or onto an older fence, where over_ramp stays 1) while an announced fence was
        outstanding: an offline run would have waited and met it."""
        current = self.sim.active_mode
        over = (self.sim.discrete["over_ramp"] == 1.0
                and (current is None or current.report != FENCE))
        if self._over_ramp and not over and self.requested > self.resolved:
            self.values["answers_late"] += 1
            self.log(f"real time: the disk left the ramp's end by t = {self.sim.t:.6g} s while "
                     f"fence version {self.requested} was still being prepared (not waited "
                     "for); an offline run (real_time false) waits and meets it")
        self._over_ramp = over

    def _unanswered(self):
        """An announcement the workers will never answer (dropped after they died or hung
        twice, or they could not start again): rejected, so that embed_pending never stays
        1 behind status 0 (issue 33)."""
        errors = self.compiler.errors
        dropped = [e for e in errors if e[0] == jobs.PREPARE_FENCE]
        if self.requested > self.resolved and (dropped or not self.compiler.alive()):
            why = dropped[-1][1] if dropped else "the background workers are gone"
            self._install(("rejected", self.requested, GEOMETRY_NO_ANSWER,
                           f"the background workers did not answer it ({why})"))
            errors[:] = [e for e in errors if e[0] != jobs.PREPARE_FENCE]

    def _install_terms(self, part, prepared=None):
        _, version, uid, L_f, jet = part
        mode_id = (install_profile(self.sim, uid, L_f, jet) if prepared is None
                   else install_prepared(self.sim, prepared))
        if not any(f[0] == uid for f in self.fences):
            self.fences.append([uid, self.texts.get(version, ""), L_f])
        self._install(("ready", version, mode_id))

    def _resolve(self, version):
        """Version ``version`` is decided now; older ones still under way never will be."""
        self.resolved = version
        self.values["embed_pending"] = float(self.requested > version)
        self.values["embed_latency"] = time.perf_counter() - self.t_request.get(
            version, time.perf_counter())
        for old in [k for k in self.t_request if k <= version]:
            self.t_request.pop(old)
            self.texts.pop(old, None)

    def _install(self, part, arc=False):
        sim, kind, version = self.sim, part[0], part[1]
        if kind in ("rejected", "terms", "ready") and version <= self.resolved:
            return      # an older announcement than one decided already: never replaces it
        if kind == "rejected":
            self._resolve(version)
            self.values["geometry_status"] = int(part[2])
            self.log(f"fence version {version} rejected, keeping version "
                     f"{self.values['geometry_version_active']}: {part[3]}")
        elif kind == "terms":
            self._install_terms(part)
        elif kind == "ready":
            if not arc:                    # announce_arc has activated it
                try:
                    activate(sim, part[2], **(part[3] if len(part) > 3 else {}))
                except GeometryError as exc:     # the disk reached a fence meanwhile
                    self._install(("rejected", version, exc.code, str(exc)))
                    return
            self._resolve(version)
            self.values["geometry_status"] = 0
            self.values["geometry_version_active"] = version
        elif kind == "embed" and self.compiler is not None:
            # the slow worker embeds the fence on its own (the fast worker sent it the
            # requests); its answer reaches the simulator's poll_background like any other
            # submission, and replaces the family's mode
            sim.expect_background_mode(part[2])
