"""Two user models written with the public API and docs/guide.md (tests/user_models/): the
latch (a flap caught by a latch or bouncing off it) and the gripper (a jaw striking and
gripping a block on a compliant mount).  Their physics against independent references: the
flap's strike time from the energy integral, Newton's two-body impact, the harmonic motion
between and after impacts, energy balances, and the constraint forces of the augmented
Lagrange multiplier system written out here; and the guide's code is the latch's code.
Both are built from their own folders with ``embed-fmu build`` (fmu_src.host.cli) and stepped by
fmpy."""

import functools
import importlib.util
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import quad

from embed import (Automaton, Guard, Jump, Mode, ModelDefinitionError, Output, Scenario, Start,
                   Var, holonomic)

HERE = Path(__file__).resolve().parent
MODELS = HERE / "user_models"
GUIDE = HERE.parent / "docs" / "guide.md"


@functools.lru_cache(maxsize=None)
def scenario(name):
    """The scenario of tests/user_models/<name>/model.py, loaded from its file."""
    spec = importlib.util.spec_from_file_location(f"user_model_{name}",
                                                  MODELS / name / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build()


def run(sc, t_end, dt=0.01, params=None, inputs=None, **kw):
    """(simulator, rows of observed outputs every dt up to t_end)."""
    sim = sc.simulator(params, inputs=inputs, **kw)
    rows = [sc.observe(sim)]
    for k in range(1, int(round(t_end / dt)) + 1):
        sim.advance(k * dt)
        rows.append(sc.observe(sim))
    return sim, rows


# ------------------------------------------------------------------------------ the latch
LATCH = {"m": 0.4, "l": 0.5, "g": 9.81, "th_c": 1.2, "e": 0.6}


def flap_energy(th, w, p=LATCH):
    return p["m"] * p["l"] ** 2 * w ** 2 / 2 - p["m"] * p["g"] * p["l"] * math.cos(th)


def strike_time(w0, p=LATCH):
    """Time from th = 0 at rate w0 to the latch: t = int dth / w(th), w from the energy."""
    a = 2 * p["g"] / p["l"]
    return quad(lambda th: 1 / math.sqrt(w0 ** 2 - a * (1 - math.cos(th))), 0, p["th_c"],
                epsabs=1e-13, epsrel=1e-13)[0]


def strike_speed(w0, p=LATCH):
    return math.sqrt(w0 ** 2 - 2 * p["g"] / p["l"] * (1 - math.cos(p["th_c"])))


def test_latch_catches_a_fast_flap_when_the_energy_integral_says():
    sc = scenario("latch")
    sim, rows = run(sc, 0.5)
    t_star = strike_time(6.0)
    assert sim.last_event_time == pytest.approx(t_star, abs=1e-9)
    assert sim.discrete["impact_speed"] == pytest.approx(strike_speed(6.0), abs=1e-9)
    before = [r for r in rows if r["mode"] == 1]
    after = [r for r in rows if r["mode"] == 2]
    assert before and after and rows[-1]["impact_count"] == 1
    for r in before:             # free swing: energy conserved (gravity only, T = 0)
        assert r["energy"] == pytest.approx(flap_energy(0.0, 6.0), abs=1e-10)
    for r in after:              # held at the latch, all kinetic energy lost in the catch
        assert r["th"] == pytest.approx(LATCH["th_c"], abs=1e-12) and abs(r["w"]) < 1e-12
        assert r["energy"] == pytest.approx(flap_energy(LATCH["th_c"], 0.0), abs=1e-12)
        assert r["constraint_residual"] < 1e-12


@pytest.mark.parametrize("T", [0.0, 0.7, 2.5, -0.2])
def test_latch_holding_torque_is_the_multiplier_of_the_augmented_system(T):
    """M thdd = F + B^T lambda, B thdd = 0 (B = 1 for Phi = th - th_c), written out."""
    sc = scenario("latch")
    sim = sc.simulator(inputs={"T": T})
    sim.advance(0.4)
    assert sim.mode == 2
    p, th = LATCH, sim.q[0]
    M = p["m"] * p["l"] ** 2
    F = -p["m"] * p["g"] * p["l"] * math.sin(th) + T
    thdd, lam = np.linalg.solve([[M, -1.0], [1.0, 0.0]], [F, 0.0])
    out = sc.observe(sim)
    assert out["holding_torque"] == pytest.approx(lam, abs=1e-12)
    assert lam == pytest.approx(p["m"] * p["g"] * p["l"] * math.sin(p["th_c"]) - T, abs=1e-12)


def test_latch_releases_on_the_input_and_the_flap_swings_free():
    sc = scenario("latch")
    sim = sc.simulator()
    sim.advance(0.5)
    assert sim.mode == 2
    sim.set_inputs({"T": 0.0, "release": 1})
    rows = []
    for k in range(1, 31):
        sim.advance(0.5 + 0.01 * k)
        rows.append(sc.observe(sim))
    assert sim.last_event_time == pytest.approx(0.5, abs=1e-12)     # acts at the step's start
    assert all(r["mode"] == 1 for r in rows)
    assert rows[-1]["th"] < LATCH["th_c"] - 0.5                     # gravity swings it down
    for r in rows:
        assert r["energy"] == pytest.approx(flap_energy(LATCH["th_c"], 0.0), abs=1e-10)


def test_latch_a_slow_strike_bounces_with_newtons_restitution():
    """w+ = -e w-: the energy lost is 1/2 m l^2 w-^2 (1 - e^2), and the flap, swinging on
    with its energy, strikes again at e w-."""
    sc = scenario("latch")
    sim, rows = run(sc, 2.0, params={"w_latch": 5.0})
    w1 = strike_speed(6.0)
    assert all(r["mode"] == 1 for r in rows)
    counts = [r["impact_count"] for r in rows]
    assert counts[-1] == 2
    e, m, l = LATCH["e"], LATCH["m"], LATCH["l"]
    E0 = flap_energy(0.0, 6.0)
    E1 = E0 - m * l ** 2 * w1 ** 2 * (1 - e ** 2) / 2
    E2 = E1 - m * l ** 2 * (e * w1) ** 2 * (1 - e ** 2) / 2
    for r, n in zip(rows, counts):
        assert r["energy"] == pytest.approx((E0, E1, E2)[n], abs=1e-9)
    assert sim.discrete["impact_speed"] == pytest.approx(e * w1, abs=1e-8)


def test_latch_released_does_not_catch():
    sc = scenario("latch")
    sim, rows = run(sc, 0.5, inputs={"release": 1})
    assert all(r["mode"] == 1 for r in rows) and rows[-1]["impact_count"] == 1
    assert rows[-1]["w"] < 0                                        # it bounced back


# ---------------------------------------------------------------------------- the gripper
GRIP = {"m_j": 0.5, "m_b": 0.2, "k": 200.0}


def newton_two_body(v_j, v_b, e, p=GRIP):
    """Speeds after a central impact with restitution e (momentum kept, separation e times
    the approach)."""
    mj, mb = p["m_j"], p["m_b"]
    vrel = v_j - v_b
    return v_j - (1 + e) * mb / (mj + mb) * vrel, v_b + (1 + e) * mj / (mj + mb) * vrel


def test_gripper_coasting_jaw_strikes_as_newtons_two_body_impact():
    """F = 0: the jaw coasts to the block at rest (t* = d / v0 exactly); after the impact
    the jaw coasts on and the block swings on its mount, x_b = v_b+/omega sin(omega tau)."""
    sc = scenario("gripper")
    sim = sc.simulator(inputs={"F": 0.0})
    t_star = 0.02 / 0.3
    sim.advance(t_star + 0.02)
    assert sim.mode == 1 and sim.impact_count == 1
    assert sim.last_event_time == pytest.approx(t_star, abs=1e-12)
    vj, vb = newton_two_body(0.3, 0.0, 0.5)
    omega = math.sqrt(GRIP["k"] / GRIP["m_b"])
    tau = 0.02
    out = sc.observe(sim)
    assert out["x_j"] == pytest.approx(vj * tau, abs=1e-10)
    assert out["v_j"] == pytest.approx(vj, abs=1e-10)
    assert out["x_b"] == pytest.approx(vb / omega * math.sin(omega * tau), abs=1e-9)
    assert out["v_b"] == pytest.approx(vb * math.cos(omega * tau), abs=1e-8)
    mu = GRIP["m_j"] * GRIP["m_b"] / (GRIP["m_j"] + GRIP["m_b"])
    assert out["energy"] == pytest.approx(GRIP["m_j"] * 0.3 ** 2 / 2
                                          - mu * 0.3 ** 2 * (1 - 0.5 ** 2) / 2, abs=1e-10)


def test_gripper_plastic_grip_follows_the_multiplier_formulation():
    """e = 0: the jaw grips at once with the common speed of a plastic impact; gripping,
    (m_j + m_b) a = F - k x, an oscillation about F/k; the contact force is the multiplier
    of M a = f + B^T lambda, B a = 0 (B = [-1, 1]), written out here."""
    sc = scenario("gripper")
    F, mj, mb, k = 2.0, GRIP["m_j"], GRIP["m_b"], GRIP["k"]
    sim = sc.simulator({"e": 0.0})
    v_hit = math.sqrt(0.3 ** 2 + 2 * F / mj * 0.02)              # jaw pushed over 0.02 m
    t_star = (v_hit - 0.3) / (F / mj)
    V = mj * v_hit / (mj + mb)
    Om = math.sqrt(k / (mj + mb))
    for t in np.arange(0.06, 0.29, 0.02):      # it lets go at x = -m_b F / (m_j k), t = 0.3
        sim.advance(t)
        tau = t - t_star
        x = F / k * (1 - math.cos(Om * tau)) + V / Om * math.sin(Om * tau)
        out = sc.observe(sim)
        assert out["mode"] == 2 and sim.impact_count == 1
        assert sim.last_event_time == pytest.approx(t_star, abs=1e-9)
        assert out["x_b"] == pytest.approx(x, abs=1e-9)
        assert out["gap"] == pytest.approx(0, abs=1e-12)
        Mmat = np.diag([mj, mb])
        B = np.array([[-1.0, 1.0]])
        f = np.array([F, -k * out["x_b"]])
        kkt = np.block([[Mmat, -B.T], [B, np.zeros((1, 1))]])
        a_j, a_b, lam = np.linalg.solve(kkt, np.concatenate((f, [0.0])))
        assert out["grip_force"] == pytest.approx(lam, abs=1e-9)
        mu = mj * mb / (mj + mb)                 # the plastic impact took 1/2 mu v^2
        assert out["energy"] == pytest.approx(mj * 0.3 ** 2 / 2 + F * 0.02 - mu * v_hit ** 2 / 2,
                                              abs=1e-10)


def test_gripper_energy_is_constant_between_impacts_and_never_gained():
    sc = scenario("gripper")
    sim, rows = run(sc, 1.0, dt=0.002)
    assert rows[-1]["impact_count"] >= 3
    for a, b in zip(rows, rows[1:]):
        if b["event_count"] == a["event_count"]:
            assert b["energy"] == pytest.approx(a["energy"], abs=1e-9)
        else:
            assert b["energy"] <= a["energy"] + 1e-9


def test_gripper_lets_go_where_the_contact_force_vanishes():
    """Gripping, N = (m_b F + m_j k x) / (m_j + m_b); with F pulled back to -1 N the jaw lets
    go at x = -m_b F / (m_j k), then accelerates at F / m_j (traced back to the event)."""
    sc = scenario("gripper")
    mj, mb, k = GRIP["m_j"], GRIP["m_b"], GRIP["k"]
    sim = sc.simulator({"e": 0.0})
    sim.advance(0.15)
    assert sim.mode == 2 and sim.q[1] > 0.01
    F = -1.0
    sim.set_inputs({"F": F})
    sim.advance(0.3)
    assert sim.mode == 1 and sim.event_count == 2
    te, t1 = sim.last_event_time, 0.3
    out = sc.observe(sim)
    v_e = out["v_j"] - F / mj * (t1 - te)
    x_e = out["x_j"] - v_e * (t1 - te) - F / mj * (t1 - te) ** 2 / 2
    assert x_e == pytest.approx(-mb * F / (mj * k), abs=1e-9)
    assert out["grip_force"] == 0.0 and out["gap"] > 0


# ------------------------------------------------------- mistakes the declarations name
@functools.lru_cache(maxsize=None)
def flap():
    """The latch's unconstrained model and its symbols (for automata built here)."""
    spec = importlib.util.spec_from_file_location("user_model_latch_parts",
                                                  MODELS / "latch" / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.build_model()
    th, th_c = sp.Symbol("th"), sp.Symbol("th_c")
    return model, th, th_c, holonomic(model, "latch", th - th_c)


def test_a_guard_without_reset_map_is_named_when_it_fires():
    model, th, th_c, latch = flap()
    modes = {1: Mode(name="free", guards=(Guard("strike", th_c - th, -1),)),
             2: Mode(name="latched", constraints=("latch",))}
    aut = Automaton(model, [latch], modes, outputs=[Output("th", th, "angle", "rad")])
    assert aut.unhandled_guards() == [(1, "free", "strike")]
    sc = Scenario("no_reset", aut, [Var(k, v) for k, v in LATCH.items()],
                  [Var("T", 0.0), Var("release", 0)], start=[Start("w", 6.0)])
    assert [v.name for v in sc.parameters][-2:] == ["th_start", "w_start"]
    assert [v.name for v in sc.outputs][:2] == ["th", "constraint_residual"]
    from embed.check.check import check_scenario
    found = [f for f in check_scenario(sc) if f.level == "error"]
    assert found and all("'strike'" in f.item and "mode 1 'free'" in f.item for f in found), found
    assert any("has no reset map" in f.message for f in found), found
    sim = sc.simulator()
    with pytest.raises(ModelDefinitionError, match=r"mode 1 \(free\): guard 'strike' has no reset"):
        sim.advance(0.5)


def test_the_scenario_transition_serves_the_guards_without_reset_map():
    model, th, th_c, latch = flap()
    modes = {1: Mode(name="free", guards=(Guard("strike", th_c - th, -1),)),
             2: Mode(name="latched", constraints=("latch",), guards=(
                 Guard("released", 0.5 - sp.Symbol("release"), -1,
                       reset=lambda ctx: Jump(1)),))}
    aut = Automaton(model, [latch], modes, outputs=[Output("th", th)],
                    transition=lambda ctx, guard: Jump(2, u=[0.0], impact=True))
    assert aut.unhandled_guards() == []
    sc = Scenario("mixed", aut, [Var(k, v) for k, v in LATCH.items()],
                  [Var("T", 0.0), Var("release", 0)], start=[Start("w", 6.0)])
    sim = sc.simulator()
    sim.advance(0.5)
    assert sim.mode == 2 and sim.q[0] == pytest.approx(LATCH["th_c"], abs=1e-12)
    sim.set_inputs({"T": 0.0, "release": 1})
    sim.advance(0.6)
    assert sim.mode == 1


@pytest.mark.parametrize("make, message", [
    (lambda th, latch: Output("th"), "output 'th' has no value"),
    (lambda th, latch: Output("th", th, multiplier="latch"), "give one of expr, multiplier"),
    (lambda th, latch: [Output("th", th), Output("th", 2 * th)], r"outputs \['th'\] are declared"),
    (lambda th, latch: Output("f", multiplier="lach"), "multiplier of 'lach', which is no constr"),
    (lambda th, latch: Output("d", discrete="count"), "discrete variable 'count' is not declared"),
])
def test_outputs_name_what_is_wrong(make, message):
    model, th, th_c, latch = flap()
    with pytest.raises(ModelDefinitionError, match=message):
        made = make(th, latch)
        Automaton(model, [latch], {1: Mode(name="free")},
                  outputs=made if isinstance(made, list) else [made])


def test_modes_starts_and_engine_outputs_name_what_is_wrong():
    model, th, th_c, latch = flap()
    with pytest.raises(ModelDefinitionError, match="mode 'free' has id 2 but is listed under key 1"):
        Automaton(model, [latch], {1: Mode(2, "free")}, outputs=[Output("th", th)])
    with pytest.raises(ModelDefinitionError, match="constraints must be a tuple"):
        Mode(name="latched", constraints="latch")
    aut = Automaton(model, [latch], {1: Mode(name="free")}, outputs=[Output("th", th)])
    with pytest.raises(ModelDefinitionError, match=r"start values for \['x'\], which are neither"):
        Scenario("s", aut, start=[Start("x", 1.0)])
    with pytest.raises(ModelDefinitionError, match="'th_start' is declared by hand and generated"):
        Scenario("s", aut, [Var("th_start", 1.0)])
    dup = Automaton(model, [latch], {1: Mode(name="free")}, outputs=[Output("mode", th)])
    with pytest.raises(ModelDefinitionError, match=r"outputs \['mode'\] are declared twice"):
        Scenario("s", dup)
    old = Automaton(model, [latch], {1: Mode(1, "free")}, {}, {"th": th},
                    lambda ctx, guard: Jump(1), lambda ctx: Jump(1))
    with pytest.raises(ModelDefinitionError, match="no outputs; declare"):
        Scenario("s", old)


# -------------------------------------------------------------------------------- the guide
def test_guide_code_is_the_latch_models_code_and_its_usage_runs(monkeypatch):
    """Every python block of docs/guide.md is a verbatim part of the latch's model file; the
    usage blocks (py) run next to its copy in docs/examples (tests/test_docs.py checks that
    the copy is this file)."""
    text = GUIDE.read_text()
    folder = MODELS / "latch"
    source = (folder / "model.py").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 6
    for block in blocks:
        assert block in source, block
    usage = re.findall(r"```py\n(.*?)```", text, flags=re.S)
    assert usage
    monkeypatch.syspath_prepend(str(HERE.parent / "docs" / "examples"))
    monkeypatch.delitem(sys.modules, "latch", raising=False)
    for block in usage:
        exec(compile(block, str(GUIDE), "exec"), {})
    monkeypatch.delitem(sys.modules, "latch", raising=False)
    assert "design.md#bibliography" in text and "api.md" in text


# ------------------------------------------------------------------- built and stepped by fmpy
@pytest.fixture(scope="module")
def user_fmus(tmp_path_factory):
    """Both user models built from their own folders with the command line (embed-fmu build)."""
    from fmu_src.host.cli import main as embed_fmu
    out = tmp_path_factory.mktemp("user_fmus")
    for name in ("latch", "gripper"):
        assert embed_fmu(["build", str(MODELS / name / "model.py"), "--out", str(out)]) == 0
    return out


def fmpy_run(fmu, stop, names, **kw):
    from fmpy import simulate_fmu
    return simulate_fmu(str(fmu), stop_time=stop, step_size=0.01, output_interval=0.01,
                        output=names, **kw)


@pytest.mark.parametrize("name", ["latch", "gripper"])
def test_user_fmu_carries_its_own_model_only_and_steps_as_the_engine(user_fmus, name):
    import zipfile
    fmu = user_fmus / f"{name}.fmu"
    other = "gripper" if name == "latch" else "latch"
    with zipfile.ZipFile(fmu) as z:
        files = z.namelist()
        sources = "".join(z.read(f).decode("utf-8", "replace") for f in files
                          if f.endswith(".py"))
    assert f"name=\"{name}\"" in sources and f"name=\"{other}\"" not in sources
    assert not any("pendulum_belt" in f or "disk_ramp" in f for f in files)
    sc = scenario(name)
    names = [v.name for v in sc.outputs]
    res = fmpy_run(fmu, 0.5, names)
    _, rows = run(sc, 0.5)
    assert len(res) == len(rows)
    for r, row in zip(res, rows):
        assert [float(r[k]) for k in names] == [float(row[k]) for k in names]


def test_latch_fmu_holds_with_the_analytic_torque_and_releases_on_its_input(user_fmus):
    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Slave
    from fmpy import extract
    fmu = user_fmus / "latch.fmu"
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    unzipdir = extract(str(fmu))
    slave = FMU2Slave(guid=md.guid, unzipDirectory=unzipdir,
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="latch")
    slave.instantiate()
    slave.setupExperiment(startTime=0.0)
    slave.enterInitializationMode()
    slave.setReal([vr["T"]], [0.5])
    slave.exitInitializationMode()
    t = 0.0
    for _ in range(50):
        slave.doStep(t, 0.01)
        t += 0.01
    real = lambda *k: slave.getReal([vr[n] for n in k])            # noqa: E731
    p = LATCH
    assert slave.getInteger([vr["mode"], vr["impact_count"]]) == [2, 1]
    th, torque = real("th", "holding_torque")
    assert th == pytest.approx(p["th_c"], abs=1e-12)
    assert torque == pytest.approx(p["m"] * p["g"] * p["l"] * math.sin(p["th_c"]) - 0.5, abs=1e-12)
    slave.setInteger([vr["release"]], [1])
    for _ in range(20):
        slave.doStep(t, 0.01)
        t += 0.01
    assert slave.getInteger([vr["mode"], vr["event_count"], vr["status"]]) == [1, 2, 0]
    th, w, E = real("th", "w", "energy")
    assert th < p["th_c"] and w < 0
    # released at 0.5 s with the motor's 0.5 N.m still on: E - T th is conserved
    assert E - 0.5 * th == pytest.approx(flap_energy(p["th_c"], 0.0) - 0.5 * p["th_c"], abs=1e-9)
    slave.terminate()
    slave.freeInstance()
