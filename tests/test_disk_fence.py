"""A fence whose shape arrives at run time (gillespie2005 Example 2), checked against
geometry written out in the test."""

import math
from pathlib import Path

import numpy as np
import pytest

from embed.geometry import FenceProfile
from fmu_src.master import FmuRunner
from scenarios import disk_fence

SC = disk_fence.build()
P = SC.defaults()


def run_with_fence(profile, L_f, t_announce=7.0, t_end=10.0, every=0.01, on_sample=None):
    """profile: a FenceProfile (embedded when announced) or a radius (the compiled arc family)."""
    sim = SC.simulator()
    sim.advance(t_announce)
    if isinstance(profile, float):
        disk_fence.announce_arc(sim, profile, L_f)
    else:
        disk_fence.announce(sim, profile, L_f)
    while sim.t < t_end - 1e-12:
        sim.advance(min(t_end, sim.t + every))
        if on_sample:
            on_sample(sim)
    return sim


def test_paper_timeline_and_the_fence_holds():
    """Met a little after the announcement (paper: 7.7 s), left at its end (paper: 9.0 s);
    on the arc the disk centre stays at R - r from the arc's centre C = P + R n."""
    R, L_f = 10.0, 6.7
    phi, L, r = P["phi"], P["L"], P["r"]
    Cx = L * math.cos(phi) - R * math.sin(phi)
    Cy = L * math.sin(phi) + R * math.cos(phi)
    worst = []

    def sample(sim):
        if sim.mode_number == 3:
            d = math.hypot(sim.q[0] - Cx, sim.q[1] - Cy)
            worst.append(max(abs(d - (R - r)), sim.residual()))
            assert SC.observe(sim)["N"] > 0               # the fence pushes: contact holds
    sim = run_with_fence(R, L_f, on_sample=sample)
    kinds = [(round(t, 2), g) for t, g, *_ in sim.events[:2]]
    assert kinds[0][1] == "ramp_end" and kinds[1][1] == "fence_end"
    assert kinds[0][0] == pytest.approx(7.7, abs=0.05)
    assert kinds[1][0] == pytest.approx(9.0, abs=0.05)
    assert len(worst) > 100 and max(worst) <= 1e-9


def test_without_a_fence_the_disk_runs_off_the_ramp():
    sim = SC.simulator()
    sim.advance(8.0)
    assert [(g, frm, to) for _, g, frm, to in sim.events] == [("ramp_end", 2, 1)]
    assert sim.u[3] == 0.0                                # q4 parked in free flight


def test_arc_and_free_form_of_the_same_circle_give_the_same_trajectory():
    """The compiled arc family (radius a run-time value) against the same circle given as text
    and embedded when it arrives: two different constraint formulations, one motion."""
    a = run_with_fence(10.0, 6.7, t_end=9.5)
    b = run_with_fence(FenceProfile.from_text("10 - sqrt(10**2 - s**2)"), 6.7, t_end=9.5)
    assert [e[1] for e in a.events] == [e[1] for e in b.events]
    assert np.array(a.q) == pytest.approx(np.array(b.q), abs=1e-9)
    assert np.array(a.u) == pytest.approx(np.array(b.u), abs=1e-9)


def test_polynomial_family_and_the_same_polynomial_embedded_on_arrival_agree():
    """A polynomial fence through the compiled family (coefficients set at run time) against
    the same text embedded when it arrives: one motion, the fence held to 1e-9."""
    text = "0.04*s**2 + 0.001*s**3"
    profile = FenceProfile.from_text(text)
    coeffs = disk_fence.poly_coefficients(profile)
    assert coeffs == pytest.approx((0.04, 0.001), rel=1e-15)
    assert disk_fence.poly_coefficients(FenceProfile.from_text("0.045*s**2")) == (0.045, 0.0)
    for other in ("s**4", "0.1*sin(s)**2", "0.04*s**2 + 0.1*s**6"):
        assert disk_fence.poly_coefficients(FenceProfile.from_text(other)) is None
    worst = []

    def held(sim):
        if sim.mode_number == disk_fence.FENCE:
            worst.append(sim.residual())

    sim = SC.simulator()
    sim.advance(7.0)
    disk_fence.activate(sim, disk_fence.POLY, Lf_poly=6.7,
                        **{str(c): v for c, v in zip(disk_fence.POLY_C, coeffs)})
    while sim.t < 9.5 - 1e-12:
        sim.advance(min(9.5, sim.t + 0.01))
        held(sim)
    ref = run_with_fence(profile, 6.7, t_end=9.5)
    assert [e[1] for e in sim.events] == [e[1] for e in ref.events] == ["ramp_end", "fence_end"]
    assert sim.events[0][3] == disk_fence.POLY
    assert np.array(sim.q) == pytest.approx(np.array(ref.q), abs=1e-9)
    assert np.array(sim.u) == pytest.approx(np.array(ref.u), abs=1e-9)
    assert worst and max(worst) <= 1e-9


def test_a_quartic_fence_holds_on_the_symbolic_path():
    """A quartic fence embedded symbolically on arrival: held to 1e-9 and, the contact smooth,
    the energy kept to 1e-9 J (expanding D and E into monomials of q4 ~ 30 had cost 7.5e-9
    and 5e-8 J here)."""
    worst, energy = [], []

    def sample(sim):
        if sim.mode_number == disk_fence.FENCE:
            o = SC.observe(sim)
            worst.append(sim.residual())
            energy.append(o["kinetic_energy"] + o["potential_energy"])
    sim = run_with_fence(FenceProfile.from_text("0.001*((s - 2)**4 - 16 + 32*s) + 0.02*s**2"),
                         6.7, t_end=9.5, every=0.001, on_sample=sample)
    assert [e[1] for e in sim.events] == ["ramp_end", "fence_end"]
    assert len(worst) > 1000 and max(worst) <= 1e-9
    assert max(energy) - min(energy) <= 1e-9

@pytest.mark.parametrize("second", ["arc", "curve"])
def test_new_geometry_while_on_the_old_fence_switches_cleanly(second):
    sim = SC.simulator()
    sim.advance(7.0)
    disk_fence.announce_arc(sim, 10.0, 6.7)
    sim.advance(8.2)
    assert sim.mode == disk_fence.ARC
    if second == "arc":
        disk_fence.announce_arc(sim, 11.0, 6.7)
        new = disk_fence.ARC
    else:
        new = disk_fence.announce(sim, FenceProfile.from_text("0.045*s**2"), 6.7).id
    assert sim.mode == new and sim.events[-1][1] == "fence_switch"
    assert sim.residual() <= 1e-9
    sim.advance(8.5)
    assert sim.mode in (new, disk_fence.FREE) and sim.residual() <= 1e-9


@pytest.mark.parametrize("text, same, where", [
    ("10 - sqrt(10**2 - s**2)", None, (0.05, 6.5)), ("0.5*(1 - cos(0.3*s))", None, (0.05, 6.5)),
    ("0.02*s**2 + 0.001*s**4", None, (0.05, 6.5)),
    ("0.01*abs(s - 2)**3 + 0.01*s**2", "0.01*(s - 2)**3 + 0.01*s**2", (2.1, 6.5))])
def test_the_familys_terms_with_a_profiles_jet_are_the_profiles_own(text, same, where):
    """install_profile (the fence formed once with h an undefined function, given the profile's
    jet at run time) against fence_mode of the profile itself (its text differentiated
    whole; ``same``, equal to it for s in ``where``, when it has an abs): B, C, gamma, Phi,
    Phi_q, the monitors and the entry terms (K, B, [0; -(B u + C)], Phi) at random states on
    the fence."""
    import symengine as se

    from embed import ConstraintSet, holonomic
    from embed.compile import lambdify
    from embed.model import TIME
    from embed.numeric import ConstraintTerms, EntryTerms, lam_symbol
    sim = SC.simulator(embedding="numeric")
    m, prof = sim.model, FenceProfile.from_text(text)
    uid = next(disk_fence._UIDS)
    mid = disk_fence.install_profile(sim, uid, 6.7, disk_fence.jet_function(prof))
    cons, mode = disk_fence.fence_mode(next(disk_fence._UIDS),
                                       FenceProfile.from_text(same or text), 6.7)
    outs, guards = sim.mode_exprs(mode.id, mode)
    margs = ([TIME] + list(m.q) + list(m.u) + list(m.forces)
             + [lam_symbol(c) for c in mode.constraints] + list(sim.psyms))
    mon_ref = lambdify(margs, list(outs) + list(guards), "reference monitors")
    entry = sim.cache["entry"][mode_names(uid)]          # the event step's one call
    entry_ref = EntryTerms(m, ConstraintSet([holonomic(m, n, phi) for n, phi in cons.items()]),
                           sim.psyms)
    rng = np.random.default_rng(4)
    L, p = P["L"], np.array(sim.pvec)
    for _ in range(5):
        q = np.r_[rng.normal(size=3), L + rng.uniform(*where)]
        u, lam = rng.normal(size=4), rng.normal(size=2)
        tq, tqu = np.r_[0.3, q, p], np.r_[0.3, q, u, p]
        for (name, phi), mine in zip(cons.items(), mode_names(uid)):
            ref = ConstraintTerms(m, holonomic(m, name, phi), sim.psyms)
            got = sim.cache["cterms"][mine]
            assert got.BC(tq) == pytest.approx(ref.BC(tq), rel=1e-12, abs=1e-12)
            assert got.phi(tq) == pytest.approx(ref.phi(tq), rel=1e-12, abs=1e-12)
            assert got.gamma(tqu) == pytest.approx(ref.gamma(tqu), rel=1e-12, abs=1e-12)
        args = np.r_[0.3, q, u, lam, p]
        assert sim.numeric_terms().mon[mid](args) == pytest.approx(mon_ref(args), rel=1e-12,
                                                                   abs=1e-12)
        for a, b in zip(entry(0.3, q, u, p), entry_ref(0.3, q, u, p)):
            assert a == pytest.approx(b, rel=1e-12, abs=1e-12)
    assert se.Symbol("fence_h3") in disk_fence.JET     # gamma needs the third derivative


def mode_names(uid):
    return (f"fence{uid}_x", f"fence{uid}_y")


def test_a_profile_on_the_familys_numeric_path_moves_like_the_arc_family():
    """The circle as text, run on the numeric embedding path with the family's terms and its
    jet (what the FMU steps before the symbolic embedding arrives), against the compiled arc
    family: the same events and motion, the fence held to 1e-9."""
    a = run_with_fence(10.0, 6.7, t_end=9.5)
    sim = SC.simulator(embedding="numeric")
    sim.advance(7.0)
    prof = FenceProfile.from_text("10 - sqrt(10**2 - s**2)")
    mid = disk_fence.install_profile(sim, next(disk_fence._UIDS), 6.7,
                                     disk_fence.jet_function(prof))
    disk_fence.activate(sim, mid)
    worst = []
    while sim.t < 9.5 - 1e-12:
        sim.advance(min(9.5, sim.t + 0.01))
        if sim.mode == mid:
            assert sim.cm.path == "numeric"
            worst.append(sim.residual())
    assert [e[1] for e in sim.events] == [e[1] for e in a.events] == ["ramp_end", "fence_end"]
    assert len(worst) > 100 and max(worst) <= 1e-9
    assert np.array(sim.q) == pytest.approx(np.array(a.q), abs=1e-8)
    assert np.array(sim.u) == pytest.approx(np.array(a.u), abs=1e-8)


MALICIOUS = [
    "__import__('os').system('touch /tmp/pwned_fence')",
    "().__class__.__bases__[0].__subclasses__()",
    "open('/etc/passwd').read()",
    "lambda: 0",
    "s.__class__",
    "9**9**9",
    "s**1000",
    "1e999",
    "x + y",
    "",
    "   ",
    "(" * 200 + "s" + ")" * 200,
    "0.1*s**2 + nan",
    "1 + s",                       # not continuous with the ramp at P
    "log(s - 1)",                  # not finite on the fence
]


def test_bad_fence_strings_are_rejected_and_the_fmu_keeps_stepping(fmu_dir):
    canary = Path("/tmp/pwned_fence")
    canary.unlink(missing_ok=True)
    r = FmuRunner(str(fmu_dir / "disk_fence.fmu"), strings={"embedding": "symbolic"},
                  instance="fence_bad")
    try:
        r.step(0.01)
        for k, text in enumerate(MALICIOUS, start=1):
            if text.strip():
                r.fmu.setString([r.vr("fence_curve")], [text])
                r.set(fence_version=k)
            else:                      # an empty curve means the arc: give it a bad radius
                r.fmu.setString([r.vr("fence_curve")], [text])
                r.set(fence_radius=-1.0, fence_version=k)
            n_msgs = len(r.messages)
            r.step(0.01)
            o = r.outputs()
            assert o["geometry_status"] != 0, text
            assert o["geometry_version_active"] == 0 and o["status"] == 0
            assert len(r.messages) > n_msgs                   # logged why
            r.set(fence_radius=10.0)
        assert not canary.exists()
        # a good one is still accepted afterwards, and used
        r.fmu.setString([r.vr("fence_curve")], [""])
        r.set(fence_version=100)
        r.step(0.01)
        assert r.outputs()["geometry_version_active"] == 100
        assert r.outputs()["geometry_status"] == 0
    finally:
        r.close()


def test_fence_announced_through_the_fmu(fmu_dir):
    r = FmuRunner(str(fmu_dir / "disk_fence.fmu"), strings={"embedding": "symbolic"},
                  instance="fence_ok")
    try:
        modes = []
        for k in range(9500):
            if k == 7000:
                r.set(fence_version=1)
            r.step(1e-3)
            o = r.get("mode", "status", "constraint_residual", "geometry_version_active")
            assert o["status"] == 0
            if not modes or modes[-1][1] != o["mode"]:
                modes.append(((k + 1) * 1e-3, o["mode"]))
            if o["mode"] == 3:
                assert o["constraint_residual"] <= 1e-9
        assert [m for _, m in modes] == [2, 3, 1]
        assert modes[1][0] == pytest.approx(7.7, abs=0.05)
        assert modes[2][0] == pytest.approx(9.0, abs=0.05)
    finally:
        r.close()


def test_a_profile_with_abs_runs_on_the_familys_numeric_path(fmu_dir):
    """A fence with abs() has no symbolic fence mode; announced through the FMU it runs on
    the family's numeric path: the fence held to 1e-9 and, the contact being smooth and the
    fence tangent to the ramp, the energy kept (RK4 at 1 ms).  Here the fourth derivative of
    h jumps at s = 2; with abs(s - 2)**3 the third does, so does the disk's acceleration, and
    RK4 stepping over that jump loses 1e-3 of the energy."""
    r = FmuRunner(str(fmu_dir / "disk_fence.fmu"), strings={"embedding": "symbolic"},
                  instance="fence_abs")
    try:
        r.set(fence_curve="0.0002*(abs(s - 2)**5 - 32 + 80*s) + 0.01*s**2")
        e0, drift, modes = None, 0.0, []
        for k in range(9500):
            if k == 7000:
                r.set(fence_version=1)
            r.step(1e-3)
            o = r.get("mode", "status", "constraint_residual", "geometry_status",
                      "kinetic_energy", "potential_energy")
            assert o["status"] == 0 and o["geometry_status"] == 0
            e = o["kinetic_energy"] + o["potential_energy"]
            e0 = e if e0 is None else e0
            if not modes or modes[-1] != o["mode"]:
                modes.append(o["mode"])
            if o["mode"] == 3:
                assert o["constraint_residual"] <= 1e-9
                drift = max(drift, abs(e - e0))
        assert modes == [2, 3, 1]
        assert 0.0 < drift <= 1e-8 * abs(e0)
    finally:
        r.close()

def test_free_form_fences_through_the_background_workers(fmu_dir):
    """The worker path of the FMU (gillespie2005 Sec 6.2): two free-form fences announced 5 ms
    apart, the second while the first is still being embedded, checked and embedded by the
    workers while stepping goes on; the disk meets the second.  The trajectory equals that of
    the FMU embedding everything in its own process, and the fence holds to 1e-9."""
    import time

    # the first a polynomial (the compiled family), the second not (embedded by the workers)
    curves = {7000: (1, "0.045*s**2"), 7005: (2, "0.5*(1 - cos(0.3*s))")}
    runs = {}
    for emb in ("background", "symbolic"):
        r = FmuRunner(str(fmu_dir / "disk_fence.fmu"), strings={"embedding": emb},
                      instance=f"fence_{emb}")
        try:
            modes = []
            for k in range(9500):
                if k in curves:
                    version, text = curves[k]
                    r.fmu.setString([r.vr("fence_curve")], [text])
                    r.set(fence_version=version)
                r.step(1e-3)
                if emb == "background" and 7000 <= k < 7600:
                    time.sleep(1e-3)        # wall time for the workers, as at a 1 kHz master
                o = r.get("mode", "status", "constraint_residual", "geometry_version_active",
                          "geometry_status", "embed_latency")
                assert o["status"] == 0 and o["geometry_status"] == 0
                if not modes or modes[-1][1] != o["mode"]:
                    modes.append(((k + 1) * 1e-3, o["mode"]))
                if o["mode"] == 3:
                    assert o["geometry_version_active"] == 2
                    assert o["constraint_residual"] <= 1e-9
            assert o["embed_latency"] > 0
            runs[emb] = (modes, [r.get(f"q{i}")[f"q{i}"] for i in range(1, 5)])
        finally:
            r.close()
    assert [m for _, m in runs["background"][0]] == [2, 3, 1]
    assert runs["background"][0] == runs["symbolic"][0]     # the same steps, the same modes
    assert runs["background"][1] == pytest.approx(runs["symbolic"][1], abs=1e-8)


def answered(bc, timeout=60):
    import time
    deadline = time.monotonic() + timeout
    while bc.outstanding and time.monotonic() < deadline:
        bc.poll()
        time.sleep(0.002)
    assert bc.outstanding == 0


def test_checks_that_run_too_long_are_stopped_by_the_worker(monkeypatch):
    """The fast worker stops a call after its time limit: an announcement whose checks do not
    finish in time is rejected with GEOMETRY_TIMEOUT, and the worker keeps serving."""
    from embed.background import BackgroundCompiler
    from embed.geometry import GEOMETRY_TIMEOUT

    pvec = np.array(SC.simulator().pvec)
    monkeypatch.setenv("EMBED_CHECK_TIME_LIMIT", "1e-4")   # no parse finishes in 0.1 ms
    bc = BackgroundCompiler("disk_fence", {})
    try:
        assert bc.wait_ready(120)
        bc.call("prepare_fence", 1, ("curve", "0.045*s**2", 6.7), pvec)
        answered(bc)
        parts = [p for _, p in bc.call_results()]
        assert parts[0][:3] == ("rejected", 1, GEOMETRY_TIMEOUT), parts
        bc.call("prepare_fence", 2, ("arc", 10.0, 6.7), pvec)   # still answering
        answered(bc)
        assert [p for _, p in bc.call_results()], bc.errors
    finally:
        bc.close()


def test_a_fence_entered_at_another_partition_is_embedded_by_the_worker_too():
    """A run-time fence's constraints are stubs here (their expressions are the workers'): the
    relay asks for its mode at the partition expected at the fence's start; entered at
    another one, the simulator asks the worker for that mode too, and steps it when it
    comes, on the same motion as the numeric path."""
    import time

    from embed.background import BackgroundCompiler
    from embed.errors import CompilationError

    bc = BackgroundCompiler("disk_fence", {})
    try:
        assert bc.wait_ready(120)
        sim = disk_fence.build().simulator(embedding="background", compiler=bc)   # own caches
        geo = disk_fence.FenceGeometry(sim, bc, lambda msg: None)
        sim.advance(7.0)
        geo.before_step({"fence_version": 1, "fence_curve": "0.5*(1 - cos(0.3*s))",
                         "fence_radius": 10.0, "fence_length": 6.7})
        deadline = time.monotonic() + 60
        while (bc.outstanding or sim.cache["submitted"] == {}) and time.monotonic() < deadline:
            sim.poll_background()
            geo.before_step({"fence_version": 1})
            time.sleep(0.002)
        (relayed,) = [k for k in sim.cache["submitted"] if k[0] >= disk_fence.FENCE_BASE]
        mode_id, active, dep = relayed
        assert sim.cache["worker_knows"] >= set(active)
        other = [d for d in ((0, 1), (0, 3), (1, 3)) if d != tuple(dep)][0]   # B1 regular
        ref = sim.compiled(mode_id, other, active)
        assert ref.path == "numeric" and (mode_id, active, other) in sim.cache["submitted"]
        while (mode_id, active, other) not in sim.cache["mode"] and time.monotonic() < deadline:
            sim.poll_background()
            time.sleep(0.002)
        cm = sim.compiled(mode_id, other, active)
        assert cm.path == "symbolic" and not bc.errors, bc.errors
        L, ph, r = sim.param("L"), sim.param("phi"), sim.param("r")
        x = np.r_[L * math.cos(ph) - r * math.sin(ph) + 0.3, L * math.sin(ph) + r * math.cos(ph),
                  0.2, L + 0.3, [2.0, 0.5][:cm.nx - 4]]
        # one RK4 step from a point near the fence: the same minimal ODE on both paths
        assert cm.rk4(7.0, 1e-3, x, sim.pvec)[:cm.nx] == pytest.approx(
            ref.rk4(7.0, 1e-3, x, sim.pvec)[:ref.nx], rel=1e-10, abs=1e-12)
        with pytest.raises(CompilationError, match="rhs=True"):    # RK4's runs never ask
            cm.rhs(7.0, x, sim.pvec)
    finally:
        bc.close()


def test_the_adaptive_solver_gets_a_run_time_fences_right_hand_side():
    """With the adaptive solver (which evaluates the right-hand side stage by stage) a fence's
    symbolic mode comes with its right-hand side; the run goes over the fence, held to 1e-9,
    with the same events as RK4."""
    import time

    from embed.background import BackgroundCompiler

    bc = BackgroundCompiler("disk_fence", {})
    try:
        assert bc.wait_ready(120)
        sim = disk_fence.build().simulator(embedding="background", compiler=bc,
                                           solver="adaptive")                  # own caches
        geo = disk_fence.FenceGeometry(sim, bc, lambda msg: None)
        sim.advance(7.0)
        inputs = {"fence_version": 1, "fence_curve": "0.5*(1 - cos(0.3*s))",
                  "fence_radius": 10.0, "fence_length": 6.7}
        deadline = time.monotonic() + 60

        def embedded():
            fence = disk_fence.FENCE_BASE + int(sim.discrete["fence"])
            return any(k[0] == fence for k in sim.cache["mode"])
        while not embedded() and time.monotonic() < deadline:   # the worker's mode, in time
            geo.before_step(inputs)
            sim.poll_background()
            time.sleep(0.002)
        worst = []
        while sim.t < 9.5 - 1e-12:
            geo.before_step(inputs)
            sim.advance(min(9.5, sim.t + 0.01))
            if sim.mode_number == disk_fence.FENCE:
                assert sim.cm.path == "symbolic" and sim.cm._rhs is not None
                worst.append(sim.residual())
        assert [e[1] for e in sim.events] == ["ramp_end", "fence_end"] and not bc.errors
        assert worst and max(worst) <= 1e-9
    finally:
        bc.close()
