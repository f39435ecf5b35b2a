"""Seeing a run (issue 26): every bundled scenario's page opened from disk in headless Chromium, the
drawn points checked against the test's own kinematics and an independent run, and the automaton
graphs (pendulum_belt's against gillespie2005 Fig 13)."""

import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import scenarios
from fmu_src.host.see import graph, graph_svg, kinematics, page, record

FLAGS = ("--headless --no-sandbox --disable-gpu --disable-background-networking "
         "--disable-component-update --disable-sync --no-first-run").split()
OPTIONS = {"pendulum_chain": {"N": 4}}     # the 10-link chain compiles for long; 4 links show it


@pytest.fixture(scope="module")
def built():
    return {n: scenarios.load(n).build(**OPTIONS.get(n, {})) for n in scenarios.NAMES}


@pytest.fixture(scope="module")
def pages(built, tmp_path_factory):
    out = {}
    d = tmp_path_factory.mktemp("see")
    for n, sc in built.items():
        rec = record.from_engine(sc, stop_time=1.0, fps=20)
        kin = kinematics.Kinematics(sc)
        out[n] = (page.write(d / f"{n}.html", page.figure(rec, kin, n)), rec, kin)
    return out


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
    yield d
    d.quit()


def _goto(b, k):
    b.execute_async_script("var cb = arguments[arguments.length - 1]; "
                           f"seeGoto({k}).then(function () {{ cb(1); }});")


def _shot(b):
    from io import BytesIO

    from PIL import Image
    return np.asarray(Image.open(BytesIO(b.get_screenshot_as_png())).convert("RGB")).astype(int)


def _open(b, path):
    b.get(path.as_uri())
    b.set_script_timeout(30)
    b.execute_async_script("var cb = arguments[arguments.length - 1]; (function w() { "
                           "if (window.seeReady) cb(1); else setTimeout(w, 50); })();")


@pytest.mark.parametrize("name", scenarios.NAMES)
def test_page_opens_and_moves(name, pages, browser):
    """No JavaScript error; between two slider times the mechanism's area changes, while the
    tick labels of the mechanism's axes (nothing moves there) stay the same."""
    path, rec, kin = pages[name]
    _open(browser, path)
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


def test_drawn_points_match_kinematics(pages, built, browser):
    """pendulum_belt: the page's P2 at a frame is the tip l1 (sin q1, -cos q1) + l2 (sin q2,
    -cos q2) of q from an independent run of the engine to that time, in the data and, mapped
    through the axes, in the drawn marker's pixel position (to a pixel)."""
    path, rec, kin = pages["pendulum_belt"]
    sc = built["pendulum_belt"]
    k = 13
    sim = sc.simulator()
    sim.advance(rec.t[k])
    q1, q2 = sim.q
    p = sc.defaults()
    tip = (p["l1"] * np.sin(q1) + p["l2"] * np.sin(q2), -p["l1"] * np.cos(q1) - p["l2"] * np.cos(q2))
    _open(browser, path)
    _goto(browser, k)
    got = browser.execute_script(
        "var gd = document.getElementById('see');"
        "var f = gd._transitionData._frames.find(function (f) { return f.name === '%d'; });"
        "var d = f.data.find(function (t) { return t.name === 'points'; });"
        "var L = gd._fullLayout; var i = gd.data.findIndex(function (t) {"
        "  return t.name === 'points'; });"
        "var pts = gd.querySelectorAll('.scatterlayer .trace')[i].querySelectorAll('.point');"
        "var tr = pts[1].getAttribute('transform');"
        "return [d.x[1], d.y[1], tr, L.xaxis.l2p(%r), L.yaxis.l2p(%r)];" % (k, float(tip[0]), float(tip[1])))
    assert got[0] == pytest.approx(tip[0], abs=1e-4) and got[1] == pytest.approx(tip[1], abs=1e-4)
    x, y = (float(v) for v in got[2].split("(")[1].rstrip(")").split(","))
    assert abs(x - got[3]) <= 1.0 and abs(y - got[4]) <= 1.0


def test_pendulum_belt_automaton_is_fig13(built, tmp_path):
    """gillespie2005 Fig 13: three modes (free 2 dof, sliding 1 dof, stuck 0 dof); a strike from
    free is an impact into free (rebound), sliding or stuck; sliding and stuck leave for free when
    the normal force turns tensile; sliding sticks when the slip vanishes; stuck slides when the
    friction leaves the cone; accumulating impacts hand over to sliding or stuck."""
    sc = built["pendulum_belt"]
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
    ET.parse(graph_svg.write(tmp_path / "pb.svg", sc))


def test_every_graph(built, tmp_path):
    for name, sc in built.items():
        text = graph.mermaid(sc)
        for k in sc.automaton.modes:
            assert f"m{k}" in text, (name, k)
        root = ET.parse(graph_svg.write(tmp_path / f"{name}.svg", sc)).getroot()
        assert root.tag.endswith("svg")


def test_cli_animate_and_gif(tmp_path):
    from fmu_src.host.cli import main
    html, gif = tmp_path / "run.html", tmp_path / "run.gif"
    assert main(["animate", "pendulum_line", "--stop-time", "0.4", "--fps", "20", "--out",
                 str(html), "--gif", str(gif), "--gif-frames", "5"]) == 0
    assert html.stat().st_size > 1e6 and "Plotly.newPlot" in html.read_text()
    from PIL import Image
    assert Image.open(gif).n_frames == 5
