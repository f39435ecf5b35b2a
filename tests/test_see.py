"""Seeing a run (issue 26): every bundled scenario's page opened from disk in headless Chromium, the
drawn points checked against the test's own kinematics and an independent run, a model without
visuals drawn from its bodies, the automaton graphs (pendulum_belt's against gillespie2005
Fig 13, every one laid out without overlapping labels), and the command line from a model with
inputs.  From an FMU and from a `simulate` CSV: tests/test_see_fmu.py.

One run per scenario (1 s at 10 frames/s) is recorded once and shared; one browser opens every
page, each written in turn to the same file: Chromium then keeps plotly.js compiled between the
pages (its code cache is keyed by the script's URL), which parses in seconds otherwise."""

import json
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import scenarios
from embed import InputError
from fmu_src.host.see import gif, graph, graph_svg, kinematics, page, record

FLAGS = ("--headless --no-sandbox --disable-gpu --disable-background-networking "
         "--disable-component-update --disable-sync --no-first-run").split()
OPTIONS = {"pendulum_chain": {"N": 4}}     # the 10-link chain compiles for long; 4 links show it
STOP, FPS = 1.0, 10.0


class Runs:
    """Each scenario built, and its run recorded and drawn, once (on first use)."""

    def __init__(self, folder):
        self.page = folder / "page.html"        # every page is opened from this one path
        self._sc, self._run = {}, {}

    def scenario(self, name):
        if name not in self._sc:
            self._sc[name] = scenarios.load(name).build(**OPTIONS.get(name, {}))
        return self._sc[name]

    def run(self, name):
        """(record, kinematics, figure) of 1 s of ``name``."""
        if name not in self._run:
            sc = self.scenario(name)
            rec = record.from_engine(sc, stop_time=STOP, fps=FPS)
            kin = kinematics.Kinematics(sc)
            self._run[name] = rec, kin, page.figure(rec, kin, name)
        return self._run[name]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return Runs(tmp_path_factory.mktemp("see"))


def _chromium():
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            pytest.skip("Debian's chromium and chromium-driver are not installed and this test "
                        "is not root with apt-get to install them")
        r = subprocess.run(["apt-get", "install", "-y", "chromium", "chromium-driver"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"apt-get could not install chromium: {r.stderr[-300:]}")
    return shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    binary, driver = _chromium()
    o = webdriver.ChromeOptions()
    for f in FLAGS + ["--user-data-dir=" + tempfile.mkdtemp(), "--window-size=1000,900"]:
        o.add_argument(f)
    o.binary_location = binary
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(driver), options=o)
    d.set_script_timeout(60)
    yield d
    d.quit()


def _goto(b, k):
    b.execute_async_script("var cb = arguments[arguments.length - 1]; "
                           f"seeGoto({k}).then(function () {{ cb(1); }});")


def _shot(b):
    from io import BytesIO

    from PIL import Image
    return np.asarray(Image.open(BytesIO(b.get_screenshot_as_png())).convert("RGB")).astype(int)


def _open(b, runs, name, run=None):
    """Write ``name``'s page (self-contained; or ``run``'s) to the shared path and open it from
    disk."""
    path = page.write(runs.page, (run or runs.run(name))[2])
    b.get(path.as_uri())
    b.execute_async_script("var cb = arguments[arguments.length - 1]; (function w() { "
                           "if (window.seeReady) cb(1); else setTimeout(w, 50); })();")
    assert b.execute_script("return document.getElementById('see').layout.title.text") == name


@pytest.mark.parametrize("name", scenarios.NAMES)
def test_page_opens_and_moves(name, runs, browser):
    """No JavaScript error; between two slider times the mechanism's area changes, while the
    tick labels of the mechanism's axes (nothing moves there) stay the same."""
    rec, kin, _ = runs.run(name)
    _open(browser, runs, name)
    _goto(browser, 2)
    a = _shot(browser)
    _goto(browser, rec.frames - 1)
    b = _shot(browser)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    box = browser.execute_script(
        "var s = document.getElementById('see')._fullLayout._size;"
        "return [s.l, s.t, s.w, s.h];")
    l, t, w, h = (int(v) for v in box)
    diff = np.any(a != b, axis=2)
    assert diff[t:t + int(0.75 * h), l:l + w].sum() > 30, "the mechanism did not move"
    assert not diff[:, :max(l - 8, 1)].any() or kin.dim == 3, "the y axis labels changed"
    assert not diff[t:t + int(0.7 * h), :max(l - 8, 1)].any()


def test_drawn_points_match_kinematics(runs, browser):
    """pendulum_belt: the page's P2 at a frame is the tip l1 (sin q1, -cos q1) + l2 (sin q2,
    -cos q2) of q from an independent run of the engine to that time, in the data and, mapped
    through the axes, in the drawn marker's pixel position (to a pixel)."""
    rec, kin, _ = runs.run("pendulum_belt")
    sc = runs.scenario("pendulum_belt")
    k = 7
    sim = sc.simulator()
    sim.advance(rec.t[k])
    q1, q2 = sim.q
    p = sc.defaults()
    tip = (p["l1"] * np.sin(q1) + p["l2"] * np.sin(q2), -p["l1"] * np.cos(q1) - p["l2"] * np.cos(q2))
    _open(browser, runs, "pendulum_belt")
    _goto(browser, k)
    _marker_at(browser, k, 1, tip)


def _latch():
    """The guide's user model (tests/user_models/latch), loaded from its file."""
    from fmu_src.builder.source import load_with_sets, resolve    # as `embed-fmu animate` does
    return load_with_sets(resolve(os.path.join(os.path.dirname(__file__), "user_models",
                                               "latch", "model.py")), {})[0]


def test_a_user_models_visuals_follow_its_kinematics(runs, browser):
    """The guide's latch declares its visuals in its own symbols: at every frame the flap runs
    from O to P = l (sin th, -cos th) for th of an independent run of the engine to that time,
    the mass is a circle about P; the latch is drawn once, along th_c; the arrow of the latch's
    force on the mass is absent while free and, held at the latch, is the statics' force
    m g sin(th_c) along (cos th_c, sin th_c) (the weight's torque m g l sin th_c over l), scaled.
    In the page, P's marker is drawn at that place to a pixel, free and latched."""
    sc = _latch()
    rec = record.from_engine(sc, stop_time=0.6, fps=20)
    kin = kinematics.Kinematics(sc)
    p = sc.defaults()
    l, th_c, m, g = p["l"], p["th_c"], p["m"], p["g"]
    sim = sc.simulator()
    th = []
    for t in rec.t:
        if t > sim.state.t:
            sim.advance(t)
        th.append(sim.q[0])
    th = np.array(th)
    P = np.stack([l * np.sin(th), -l * np.cos(th)], axis=1)
    assert kin.point_names == ["O", "P"]
    np.testing.assert_allclose(kin.points(rec)[:, 1], P, atol=1e-9)
    strokes = {s.name: s for s in kin.strokes(rec)}
    np.testing.assert_allclose(strokes["flap"].xyz[:, 0], 0, atol=1e-12)
    np.testing.assert_allclose(strokes["flap"].xyz[:, 1], P, atol=1e-9)
    ring = strokes["mass"].xyz
    np.testing.assert_allclose(np.linalg.norm(ring - P[:, None, :], axis=2), 0.04, atol=1e-12)
    latch = strokes["latch"]
    assert latch.static
    axis = np.array([np.sin(th_c), -np.cos(th_c)])
    np.testing.assert_allclose(latch.xyz[0], [0.9 * l * axis, 1.3 * l * axis], atol=1e-12)
    free, held = rec.mode == 1, rec.mode == 2
    assert free.sum() >= 3 and held.sum() >= 3
    arrow = strokes["latch force on the mass"].xyz
    assert np.isnan(arrow[free]).all()
    np.testing.assert_allclose(th[held], th_c, atol=1e-9)
    force = m * g * np.sin(th_c) * np.array([np.cos(th_c), np.sin(th_c)])
    np.testing.assert_allclose(arrow[held, 0], P[held], atol=1e-9)          # at P
    np.testing.assert_allclose(arrow[held, 1], P[held] + 0.05 * force, atol=1e-6)   # to its tip
    for k in (int(np.flatnonzero(free)[1]), int(np.flatnonzero(held)[-1])):
        _open(browser, runs, "latch", (rec, kin, page.figure(rec, kin, "latch")))
        _goto(browser, k)
        _marker_at(browser, k, 1, P[k])


def _marker_at(b, k, i, want):
    """Frame k's point i in the page's data is ``want`` (to the page's rounding), and its
    drawn marker sits where the axes map ``want`` (to a pixel)."""
    got = b.execute_script(
        "var gd = document.getElementById('see');"
        "var f = gd._transitionData._frames.find(function (f) { return f.name === '%d'; });"
        "var L = gd._fullLayout; var i = gd.data.findIndex(function (t) {"
        "  return t.name === 'points'; });"
        "var d = f.data[f.traces.indexOf(i)];"
        "var pts = gd.querySelectorAll('.scatterlayer .trace')[i].querySelectorAll('.point');"
        "var tr = pts[%d].getAttribute('transform');"
        "return [d.x[%d], d.y[%d], tr, L.xaxis.l2p(%r), L.yaxis.l2p(%r)];"
        % (k, i, i, i, float(want[0]), float(want[1])))
    step = b.execute_script("return document.getElementById('see').layout.meta.resolution")
    assert step <= 1e-3 and np.allclose(got[:2], want, rtol=0, atol=step / 2 + 1e-9), got
    x, y = (float(v) for v in got[2].split("(")[1].rstrip(")").split(","))
    assert abs(x - got[3]) <= 1.0 and abs(y - got[4]) <= 1.0


def _drawn(trace, dim):
    """What a trace draws: its line segments (as a set) and its markers (in order)."""
    pts = list(zip(*[list(trace[k]) for k in "xyz"[:dim]]))
    segs = {tuple(sorted((a, b))) for a, b in zip(pts, pts[1:]) if None not in a + b}
    return segs if "lines" in trace.get("mode", "lines") else pts


@pytest.mark.parametrize("name", ["pendulum_belt", "pendulum_chain", "ball_bowl"])
def test_the_smaller_page_draws_what_the_whole_frames_draw(runs, name):
    """Every frame of the page (its traces merged with the frame's coordinates, as plotly
    animates) draws the same segments and markers as frames that repeat every moving trace whole
    with each segment apart, at the same rounding; and that rounding is below a quarter of a
    pixel of a 1000-pixel view."""
    rec, kin, small = runs.run(name)
    step = small["layout"]["meta"]["resolution"]
    whole = page.figure(rec, kin, name, step=step, share=False)
    dim = kin.dim
    lo, hi = page._bounds(kin.strokes(rec), kin.points(rec), dim)
    assert step <= float(np.max(hi - lo)) / 1000 / 2
    by_name = {t["name"]: i for i, t in enumerate(small["data"])}
    for fw, fs in zip(whole["frames"], small["frames"]):
        for i, d in zip(fw["traces"], fw["data"]):
            base = whole["data"][i]
            j = by_name[base["name"]]
            got = dict(small["data"][j])
            if j in fs["traces"]:
                got.update(fs["data"][fs["traces"].index(j)])
            want = dict(base, **d)
            assert _drawn(got, dim if i < len(whole["data"]) - 1 else 2) == \
                _drawn(want, dim if i < len(whole["data"]) - 1 else 2), (fw["name"], base["name"])
            assert got.get("text") == want.get("text")
    saved = 1 - len(json.dumps(small["frames"])) / len(json.dumps(whole["frames"]))
    # the belt's marks keep their x, the chain's joints are drawn once; the ball moves whole
    assert saved > {"pendulum_belt": 0.25, "pendulum_chain": 0.25}.get(name, 0.0), saved


def test_a_model_without_visuals_is_drawn_from_its_bodies(runs):
    """pendulum_line with its visuals taken away: its particles' points P1, P2 are drawn where
    l1 (sin q1, -cos q1) and that plus l2 (sin q2, -cos q2) put them, joined to the pivot and
    to each other, in 2D."""
    rec, _, _ = runs.run("pendulum_line")
    sc = runs.scenario("pendulum_line").replace(visuals=None)
    kin = kinematics.Kinematics(sc)
    assert kin.dim == 2 and kin.point_names == ["P1", "P2"]
    p = sc.defaults()
    q1, q2 = rec.column("q1"), rec.column("q2")
    p1 = np.stack([p["l1"] * np.sin(q1), -p["l1"] * np.cos(q1)], axis=1)
    p2 = p1 + np.stack([p["l2"] * np.sin(q2), -p["l2"] * np.cos(q2)], axis=1)
    np.testing.assert_allclose(kin.points(rec), np.stack([p1, p2], axis=1), atol=1e-12)
    segs = sorted(((s.xyz[:, 0], s.xyz[:, 1]) for s in kin.strokes(rec)), key=lambda s: s[1][0, 1])
    np.testing.assert_allclose(segs[0][0], p1, atol=1e-12)        # P1 to P2
    np.testing.assert_allclose(segs[0][1], p2, atol=1e-12)
    np.testing.assert_allclose(segs[1][0], 0, atol=1e-12)         # the pivot to P1
    np.testing.assert_allclose(segs[1][1], p1, atol=1e-12)


def test_the_walkers_are_drawn_standing_on_their_ground(runs):
    """The visuals' feet where the constraints hold them: biped7's forward heel and backward toe
    at y = 0 (Phi_q1, Phi_q2) at every frame; kneed_walker's stance foot (the inner one in
    modes 1-3, the outer in 4-6) at (p_x, -p_x tan(slope)) on the slope, over a heel strike."""
    rec, kin, _ = runs.run("biped7")
    pts = dict(zip(kin.point_names, np.moveaxis(kin.points(rec), 1, 0)))
    np.testing.assert_allclose(pts["heel1"][:, 1], 0, atol=1e-8)
    np.testing.assert_allclose(pts["toe2"][:, 1], 0, atol=1e-8)
    rec, kin, _ = runs.run("kneed_walker")
    pts = dict(zip(kin.point_names, np.moveaxis(kin.points(rec), 1, 0)))
    stance = np.where((rec.mode <= 3)[:, None], pts["foot_i"], pts["foot_o"])
    p_x, slope = rec.column("p_x"), runs.scenario("kneed_walker").defaults()["slope"]
    assert len(set(p_x)) > 1                          # a heel strike moved the stance foot
    np.testing.assert_allclose(stance, np.stack([p_x, -p_x * np.tan(slope)], axis=1), atol=1e-8)


def test_pendulum_belt_automaton_is_fig13(runs, tmp_path):
    """gillespie2005 Fig 13: three modes (free 2 dof, sliding 1 dof, stuck 0 dof); a strike from
    free is an impact into free (rebound), sliding or stuck; sliding and stuck leave for free when
    the normal force turns tensile; sliding sticks when the slip vanishes; stuck slides when the
    friction leaves the cone; accumulating impacts hand over to sliding or stuck."""
    sc = runs.scenario("pendulum_belt")
    nodes, edges = graph.automaton_graph(sc)
    assert {(n.id, n.name, n.dof) for n in nodes} == {(1, "free", 2), (2, "sliding", 1),
                                                      (3, "stuck", 0)}
    got = {(e.source, e.target, e.guard, e.impact) for e in edges}
    for want in [(1, 1, "strike", True), (1, 2, "strike", True), (1, 3, "strike", True),
                 (2, 1, "release", False), (3, 1, "release", False), (2, 3, "slip_zero", False),
                 (3, 2, "friction_cone", False), (1, 2, "Zeno", True), (1, 3, "Zeno", True),
                 ("start", 1, "initial", False)]:
        assert want in got
    assert not any(e.target == "?" for e in edges)
    kinds = {e.guard: e.kind for e in edges}
    assert kinds["strike"] == "approaching" and kinds["release"] == "level"
    text = graph.mermaid(sc)
    assert text.startswith("flowchart") and "Zeno handover" in text and "m3" in text
    resets = {(e.guard, e.reset) for e in edges}     # lambdas named by what they do
    assert {("release", "enter free, set contact"), ("friction_cone", "enter sliding, set s_dir"),
            ("initial", "enter free, set contact"), ("strike", "strike"),
            ("Zeno", "zeno")} <= resets


def _overlaps(boxes):
    return [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:]
            if ba.overlaps(bb)]


def test_every_graph(runs, tmp_path):
    """Every bundled scenario's automaton as Mermaid text naming every mode and as SVG, every
    mode and every edge label drawn once, no two of them overlapping; no reset map shown as a
    lambda (nor as the class name EnterMode) in the graph, its Mermaid text or `info`'s text."""
    for name in scenarios.NAMES:
        sc = runs.scenario(name)
        text = graph.mermaid(sc)
        for k in sc.automaton.modes:
            assert f"m{k}" in text, (name, k)
        nodes, edges = graph.automaton_graph(sc)
        for e in edges:
            assert "lambda" not in e.reset and "EnterMode" not in e.reset and e.reset, (name, e)
        for shown in (text, graph.text(sc)):
            assert "lambda@" not in shown and "<lambda>" not in shown, name
        fig, boxes = graph_svg.draw(sc)
        labels = {k for k, _ in boxes}
        assert {("node", n.id) for n in nodes} <= labels, name
        assert len([k for k in labels if k[0] == "edge"]) == len(
            {(e.source, e.target, e.guard) for e in edges if e.kind != "initial"}), name
        assert not _overlaps(boxes), (name, _overlaps(boxes))
        root = ET.parse(graph_svg.save(fig, tmp_path / f"{name}.svg")).getroot()
        assert root.tag.endswith("svg")


def test_cli_animate_and_gif(tmp_path):
    """`animate` writes the self-contained page and the GIF, every k-th frame for --gif-fps
    (at most --gif-frames), each shown for its run time."""
    from fmu_src.host.cli import main
    html, out = tmp_path / "run.html", tmp_path / "run.gif"
    assert main(["animate", "pendulum_line", "--stop-time", "0.4", "--fps", "20", "--out",
                 str(html), "--gif", str(out), "--gif-fps", "10"]) == 0
    assert html.stat().st_size > 1e6 and "Plotly.newPlot" in page.code(html.read_text())
    from PIL import Image
    im = Image.open(out)
    assert im.n_frames == 5 and im.info["duration"] == 100       # every 2nd of 9, 0.1 s each
    rec = record.Record("r", np.arange(9) / 20, {}, np.ones(9))
    assert gif.frame_indices(rec) == list(range(9))               # 25 frames/s: every one
    assert gif.frame_indices(rec, max_frames=3) == [0, 3, 6]      # --gif-frames 3


def test_cli_animate_with_input(runs, tmp_path):
    """pendulum_belt with the belt speed v_b_in from a CSV: the run is the engine's with that
    input (linearly interpolated) set at each frame and held to the next, as an FMI master
    does; a CSV naming no input is refused."""
    from fmu_src.host.cli import parser
    from fmu_src.host.see.commands import recorded
    path = tmp_path / "belt.csv"
    path.write_text("time,v_b_in\n0,0.5\n1.2,-1.5\n")
    argv = ["animate", "pendulum_belt", "--input", str(path), "--stop-time", "1.2", "--fps", "10"]
    sc = runs.scenario("pendulum_belt")
    rec = recorded(parser().parse_args(argv), sc, {})
    v = 0.5 - 2 / 1.2 * rec.t
    np.testing.assert_allclose(rec.column("v_b_in"), v, atol=1e-12)
    still = record.from_engine(sc, stop_time=1.2, fps=10)          # the belt at its start speed
    assert np.abs(rec.column("q1") - still.column("q1")).max() > 1e-3
    sim = sc.simulator()
    for k, t in enumerate(rec.t):         # each frame's input held over the next step
        if t > sim.state.t:
            sim.advance(t)
        assert (rec.column("q1")[k], rec.column("q2")[k]) == pytest.approx(tuple(sim.q), abs=1e-12)
        sim.set_inputs({"v_b_in": float(v[k])})
    path.write_text("time,v_belt\n0,1\n1,1\n")
    with pytest.raises(InputError, match="v_belt"):
        recorded(parser().parse_args(argv), sc, {})


def test_record_reads_outputs_under_other_names(runs):
    """A table of outputs (an FMU's, a CSV's) fills the columns its outputs carry under other
    names: kneed_walker's hip_x, hip_y are qx, qy, its stance_foot_x the discrete p_x."""
    sc = runs.scenario("kneed_walker")
    al = record.aliases(sc)
    assert al["hip_x"] == "qx" and al["hip_y"] == "qy" and al["stance_foot_x"] == "p_x"
    rec = runs.run("kneed_walker")[0]
    table = {"time": rec.t, "hip_x": rec.column("qx"), "hip_y": rec.column("qy"),
             "stance_foot_x": rec.column("p_x"),
             **{n: rec.column(n) for n in ("qi1", "qi2", "qo1", "qo2")}}
    kin = runs.run("kneed_walker")[1]
    np.testing.assert_allclose(kin.points(record.from_table(sc, table)), kin.points(rec),
                               atol=1e-12)
