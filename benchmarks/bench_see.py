"""Seeing a run (issue 26): time to record, write the HTML page and the GIF (25 frames/s, 250
frames) of a 10 s run at 100 frames/s, the page's size, and the page's frame rate in headless
Chromium (seeGoto frame after frame) for the 20-link chain.  Times are wall clock; the last
column is the machine's 1-minute load average when the row was measured (2 cores here, shared:
at a load of 10 a single-threaded step takes about 5 times its idle time).
Each page is written three times in one run: "before", every moving trace whole in every frame
with 5 decimals and each segment apart, plotly.js inlined as it is (``page.figure(...,
step=1e-5, share=False)``, ``page.write(..., compress=False)``: the page as it was written before
it was made smaller); "frames", the default frames (coordinates rounded to the view's
``page.resolution``, a frame's traces holding only the coordinates that change, joined
segments), plotly.js as it is; "after", the default page (the same, plotly.js and the figure
gzip-compressed).  "open s": from loading the page in Chromium to its first frame drawn (a
fresh browser each time, so nothing cached); the GIF is the same for all three.
Run: PYTHONPATH=. python benchmarks/bench_see.py"""

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import scenarios
from fmu_src.host.see import gif, kinematics, page, record


def main(stop=10.0, fps=100.0):
    out = Path(tempfile.mkdtemp(prefix="bench_see_"))
    rows = []
    for name, opts in (("pendulum_belt", {}), ("pendulum_chain", {"N": 20})):
        sc = scenarios.load(name).build(**opts)
        t0 = time.perf_counter()
        rec = record.from_engine(sc, stop_time=stop, fps=fps)
        t1 = time.perf_counter()
        kin = kinematics.Kinematics(sc)
        gif_path = gif.write(out / f"{name}.gif", rec, kin, name)
        t_gif = time.perf_counter() - t1
        from PIL import Image
        for label, kw, compress in (("before", dict(step=1e-5, share=False), False),
                                    ("frames", {}, False), ("after", {}, True)):
            t2 = time.perf_counter()
            html = page.write(out / f"{name}_{label}.html", page.figure(rec, kin, name, **kw),
                              compress=compress)
            t3 = time.perf_counter()
            opened, fps_page = browser_fps(html, bench=name == "pendulum_chain")
            rows.append((name, label, rec.frames, t1 - t0, t3 - t2, os.path.getsize(html) / 1e6,
                         opened, t_gif, os.path.getsize(gif_path) / 1e3,
                         Image.open(gif_path).n_frames, fps_page, os.getloadavg()[0]))
    print(f"{'scenario':<16}{'page':>7}{'frames':>7}{'run s':>8}{'html s':>8}{'html MB':>9}"
          f"{'open s':>8}{'gif s':>8}{'gif kB':>8}{'gif fr':>7}{'page fps':>9}{'load':>6}")
    for r in rows:
        print(f"{r[0]:<16}{r[1]:>7}{r[2]:>7}{r[3]:>8.1f}{r[4]:>8.1f}{r[5]:>9.2f}{r[6]:>8.2f}"
              f"{r[7]:>8.1f}{r[8]:>8.0f}{r[9]:>7}{r[10]:>9.1f}{r[11]:>6.1f}")
    js = len(plotly_js()) / 1e6
    print(f"of each page, plotly.js inlined: {js:.2f} MB")


def plotly_js() -> str:
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


def browser_fps(html, repeats=3, bench=True):
    """(seconds from loading ``html`` to its first frame drawn, the median frames per second of
    ``seeBench(200)`` over ``repeats``, or NaN without ``bench``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    o = webdriver.ChromeOptions()
    for f in ("--headless --no-sandbox --disable-gpu --disable-background-networking "
              "--disable-component-update --disable-sync --no-first-run").split():
        o.add_argument(f)
    o.add_argument("--user-data-dir=" + tempfile.mkdtemp())
    o.binary_location = "/usr/bin/chromium"
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
    try:
        d.set_script_timeout(300)
        t0 = time.perf_counter()
        d.get(Path(html).as_uri())
        d.execute_async_script("var cb = arguments[arguments.length - 1]; (function w() { "
                               "if (window.seeReady) cb(1); else setTimeout(w, 20); })();")
        opened = time.perf_counter() - t0
        if not bench:
            return opened, float("nan")
        return opened, statistics.median(d.execute_async_script(
            "var cb = arguments[arguments.length - 1]; seeBench(200).then(cb);")
            for _ in range(repeats))
    finally:
        d.quit()


if __name__ == "__main__":
    main()
