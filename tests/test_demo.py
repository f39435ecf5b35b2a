"""The demo (``make demo``: fmu_src/host/demo.py) prints gillespie2005 Fig 7's event table from the
built disk_ramp.fmu, with the event times of the piecewise analytic solution (tests/
disk_analytic.py), and exits non-zero with a message rather than print an empty table behind
"status: ok" (issue 33: that happened once in a fresh clone; 164 fresh runs (17 of them from a fresh clone and build) did not repeat it)."""

import re

import pytest

from disk_analytic import DiskAnalytic
from fmu_src.host import demo
from scenarios import disk_ramp

ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)\s+(sliding|rolling) -> (sliding|rolling)\s")


def test_demo_prints_the_events_of_the_analytic_solution(disk_fmu, tmp_path, capsys):
    assert demo.main([disk_fmu, "--png", str(tmp_path / "fig7.png")]) == 0
    out = capsys.readouterr().out
    rows = [ROW.match(line).groups() for line in out.splitlines() if ROW.match(line)]
    ref = DiskAnalytic(disk_ramp.build().defaults(), 8.0)
    times = [t for t, kind, _ in ref.events if kind != "input"]
    assert len(rows) == len(times) == 4, (rows, ref.events)
    for (n, t, _, _), t_ref in zip(rows, times):
        assert float(t) == pytest.approx(t_ref, abs=1e-5)
    assert [r[2:] for r in rows] == [("sliding", "rolling"), ("rolling", "sliding"),
                                     ("sliding", "sliding"), ("sliding", "rolling")]
    assert "status: ok" in out and (tmp_path / "fig7.png").stat().st_size > 0
