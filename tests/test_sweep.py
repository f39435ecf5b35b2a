"""Studies at scale (issue 16): sweeps and Monte Carlo studies run on Dask distributed.

A sweep of disk_ramp's friction coefficient reproduces, case by case, the event times and
states of the piecewise analytic solution (tests/disk_analytic.py), through the engine and
through the FMU; a Monte Carlo study of pendulum_belt's restitution and belt speed gives the
same results bit for bit on one and on two worker processes, its draws are numpy's from the
seed and the case number, and a case equals the simulator run alone; a case the model refuses
is recorded with its status while the others complete; a study resumes without running a
case twice."""

from __future__ import annotations

import math
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from disk_analytic import DiskAnalytic
from fmu_src.host import study_spec
from fmu_src.host.study import Study
from scenarios import disk_ramp, pendulum_belt

T_DISK = 3.0          # rolling from rest, then the end of the friction zone
MU = [0.1, 0.2, 0.3, 0.5]
DEFAULTS = disk_ramp.build().defaults()
DISK = {"stop_time": T_DISK, "step": 0.01, "outputs": ["q1"],
        "summaries": ["event_times", "events", "first_entry:rolling", "final_mode",
                      "max_residual", "final:q1", "final:u1", "final:u2"]}


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of two worker processes (one thread each), started once."""
    from distributed import Client, LocalCluster
    import logging
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def check_against_analytic(row):
    """One disk case's summaries against the analytic solution at its mu."""
    ref = DiskAnalytic({**DEFAULTS, "mu": row["mu"]}, T_DISK)
    times = [t for t, _, _ in ref.events]
    assert row["events"] == len(times)
    got = list(row["event_times"])
    assert len(got) == len(times)
    for t, tr in zip(got, times):
        assert t == pytest.approx(tr, abs=1e-9)
    rolling = [t for t, _, mode in ref.events if mode == 2]
    first = row["first_entry_rolling"]
    assert (first == pytest.approx(rolling[0], abs=1e-9)) if rolling else np.isnan(first)
    st = ref.state(T_DISK)
    assert row["final_mode"] == st["mode"]
    for name in ("q1", "u1", "u2"):
        assert row[f"final_{name}"] == pytest.approx(st[name], abs=1e-6)
    assert row["max_residual"] <= 1e-12


def test_disk_mu_sweep_reproduces_the_analytic_events_case_by_case(client, tmp_path):
    study = Study("disk_ramp", {**DISK, "parameters": {"mu": MU}}, out=tmp_path / "mu")
    df = study.run(client=client, chunk=1, progress=False)
    assert list(df["case"]) == [0, 1, 2, 3] and list(df["mu"]) == MU
    assert (df["status"] == 0).all(), df["error"].tolist()
    for _, row in df.iterrows():
        check_against_analytic(row)
    # the kept series: q1 at every communication point, against the analytic q1
    s = study.series(case=2)
    ref = DiskAnalytic({**DEFAULTS, "mu": MU[2]}, T_DISK)
    assert len(s) == 301
    for t, q1 in zip(s["time"][::50], s["q1"][::50]):
        assert q1 == pytest.approx(ref.state(t)["q1"], abs=1e-6)
    # kept in memory (no folder): the same rows and series
    mem = Study("disk_ramp", {**DISK, "parameters": {"mu": MU}})
    pd.testing.assert_frame_equal(comparable(mem.run(client=client, progress=False)),
                                  comparable(df), check_exact=True)
    pd.testing.assert_frame_equal(mem.series(case=2), s, check_exact=True)


def test_a_refused_case_is_recorded_and_the_others_complete_engine_and_fmu(client, tmp_path):
    """mu < 0 is refused (disk_ramp: mu nonnegative) with status 9 (an input or parameter
    value rejected), by the engine's check and by the FMU; the other cases give the analytic
    answers, and the FMU's equal the engine's bit for bit."""
    mu = [0.2, -0.1, 0.5]
    frames = {}
    for runner in ("engine", "fmu"):
        spec = {**DISK, "summaries": DISK["summaries"][1:], "runner": runner,
                "parameters": {"mu": mu}}
        df = Study("disk_ramp", spec, out=tmp_path / runner).run(client=client,
                                                                   progress=False)
        assert list(df["status"]) == [0, 9, 0]
        assert "mu = -0.1" in df["error"][1] and df["error"][0] == df["error"][2] == ""
        assert df.loc[1, "t_reached"] == 0.0 and pd.isna(df.loc[1, "final_mode"])
        for k in (0, 2):
            row = {**df.loc[k].to_dict(), "event_times": None}
            ref = DiskAnalytic({**DEFAULTS, "mu": mu[k]}, T_DISK)
            assert row["events"] == len(ref.events)
            assert row["final_u1"] == pytest.approx(ref.state(T_DISK)["u1"], abs=1e-6)
        frames[runner] = df.drop(columns=["seconds", "error"])
    pd.testing.assert_frame_equal(frames["engine"], frames["fmu"], check_exact=True)


BELT = {"stop_time": 1.0, "step": 0.01, "seed": 2026, "samples": 6, "outputs": ["q1", "q2"],
        "parameters": {"e1": {"uniform": [0.5, 1.0]}, "v_b": {"normal": [2.5, 0.3]}},
        "summaries": ["final_mode", "events", "impacts", "first_entry:stuck", "event_times",
                      "max_residual", "final:q1", "final:u2", "max:kinetic_energy"]}


def comparable(df):
    df = df.drop(columns=["seconds"]).copy()
    df["event_times"] = df["event_times"].map(tuple)
    return df


def test_monte_carlo_is_bit_for_bit_the_same_on_one_and_two_workers(client, tmp_path):
    from distributed import Client, LocalCluster
    import logging

    two = Study("pendulum_belt", BELT, out=tmp_path / "two")
    df2 = two.run(client=client, chunk=1, progress=False)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as one_client:
        one = Study("pendulum_belt", BELT, out=tmp_path / "one")
        df1 = one.run(client=one_client, chunk=4, progress=False)
    assert (df2["status"] == 0).all(), df2["error"].tolist()
    models = client.run(lambda: [k[1] for k in __import__("fmu_src.host.case_run").host.case_run._CACHE])
    assert len(models) == 2 and all("pendulum_belt" in m for m in models.values())  # both ran
    pd.testing.assert_frame_equal(comparable(df1), comparable(df2), check_exact=True)
    pd.testing.assert_frame_equal(one.series(), two.series(), check_exact=True)
    # the draws are numpy's from (seed, case number), in the study's order of the names
    for i in range(6):
        rng = np.random.default_rng([BELT["seed"], i])
        assert df2.loc[i, "e1"] == rng.uniform(0.5, 1.0)
        assert df2.loc[i, "v_b"] == rng.normal(2.5, 0.3)
    assert df2["e1"].nunique() == 6 and df2["impacts"].min() >= 1
    # a case equals the simulator run alone with its values (the belt follows v_b)
    sc = pendulum_belt.build()
    k = 3
    p = {"e1": df2.loc[k, "e1"], "v_b": df2.loc[k, "v_b"]}
    sim = sc.simulator(p, inputs={"v_b_in": p["v_b"]})
    t = 0.0
    for _ in range(100):
        t = t + 0.01
        sim.advance(t)
    assert df2.loc[k, "final_q1"] == sim.q[0] and df2.loc[k, "final_u2"] == sim.u[1]
    assert df2.loc[k, "impacts"] == sim.impact_count
    assert list(df2.loc[k, "event_times"]) == [e[0] for e in sim.events]
    assert df2.loc[k, "final_mode"] == sim.mode_number


def test_resume_runs_each_case_once_and_reruns_on_demand(client, tmp_path):
    spec = {**DISK, "summaries": ["events", "final:q1"], "outputs": [],
            "parameters": {"mu": [0.2, 0.3, -1.0, 0.5]}}
    out = tmp_path / "resume"
    parts = lambda: sorted((out / "cases").glob("part-*.parquet"))   # noqa: E731
    cases_in = lambda p: sorted(pd.read_parquet(p)["case"])          # noqa: E731

    first = Study("disk_ramp", spec, out=out).run(client=client, cases=[0, 3], progress=False)
    assert list(first["case"]) == [0, 3]
    again = Study("disk_ramp", spec, out=out)          # a new session: the folder resumes
    assert [i for i, _ in again.pending()] == [1, 2]
    # through the cluster's address, as --scheduler does
    df = again.run(scheduler=client.scheduler.address, chunk=1, progress=False)
    every = lambda: sorted(sum((cases_in(p) for p in parts()), []))  # noqa: E731
    assert every() == [0, 1, 2, 3]                     # each case run once
    assert list(df["case"]) == [0, 1, 2, 3] and list(df["status"]) == [0, 0, 9, 0]
    assert again.pending() == []
    assert again.run(client=client, progress=False).equals(df) and every() == [0, 1, 2, 3]
    # case 1 alone again: its row replaced; failed ones again: case 2 only
    again.run(client=client, cases=[1], progress=False)
    assert cases_in(parts()[-1]) == [1]
    again.run(client=client, rerun_failed=True, progress=False)
    assert cases_in(parts()[-1]) == [2]
    final = again.results()
    assert len(final) == 4
    pd.testing.assert_frame_equal(final.drop(columns="seconds"), df.drop(columns="seconds"))
    # the folder belongs to this study
    with pytest.raises(Exception, match="another study"):
        Study("disk_ramp", {**spec, "stop_time": 2.0}, out=out)


def test_the_study_file_and_the_options_describe_the_same_cases(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('stop_time = 2.0\nseed = 5\nsamples = 3\n'
                    'summaries = ["final_mode", "first_entry:rolling"]\n'
                    '[parameters]\nmu = {linspace = [0.1, 0.3, 3]}\nJ = [0.25, 0.5]\n'
                    'r = {uniform = [0.9, 1.1]}\n[inputs]\nF_ext = 0.5\n')
    spec = study_spec.read(path)
    cli = study_spec.with_axes(study_spec.from_dict({"stop_time": 2.0, "seed": 5, "samples": 3},
                                                     check=False),
                               [study_spec.parse_vary(t) for t in
                                ("mu=linspace(0.1,0.3,3)", "J=0.25,0.5", "r=uniform(0.9,1.1)",
                                 "F_ext=0.5")])
    assert study_spec.cases(spec) == study_spec.cases(cli)
    cases = study_spec.cases(spec)
    assert len(cases) == 3 * 2 * 3
    assert [c[1]["mu"] for c in cases[::6]] == list(np.linspace(0.1, 0.3, 3))
    assert [c[1]["J"] for c in cases[:6]] == [0.25] * 3 + [0.5] * 3
    assert all(c[1]["F_ext"] == 0.5 for c in cases)
    for bad, what in (("mu=normal(1)", "takes 2"), ("mu=exp(1,2)", "unknown"),
                      ("mu=nan", "not finite"), ("mu", "NAME=VALUES")):
        with pytest.raises(Exception, match=what):
            study_spec.parse_vary(bad)
    with pytest.raises(Exception, match="not a parameter"):
        Study("disk_ramp", {"parameters": {"F_ext": [1.0]}})
    with pytest.raises(Exception, match="not an output"):
        Study("disk_ramp", {"parameters": {"mu": [0.1]}, "outputs": ["nope"]})
    with pytest.raises(Exception, match="not a mode"):
        Study("disk_ramp", {"parameters": {"mu": [0.1]}, "summaries": ["first_entry:flying"]})


def test_the_command_line_runs_a_study_file_resumes_and_plots(tmp_path):
    study = tmp_path / "mu.toml"
    study.write_text('stop_time = 1.0\nsummaries = ["final_mode", "first_entry:rolling"]\n'
                     '[parameters]\nmu = [0.1, 0.4]\n')
    cmd = [sys.executable, "-m", "fmu_src.host.cli", "sweep", "disk_ramp", "--study", str(study),
           "--vary", "mu=0.1,0.4,-2", "--workers", "1", "--out", str(tmp_path / "r"),
           "--plot", str(tmp_path / "mu.png")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "3/3 cases done, 1 failed" in proc.stderr
    assert "case 2 failed (status 9): mu = -2.0 must not be negative" in proc.stderr
    assert (tmp_path / "mu.png").stat().st_size > 10_000
    df = pd.read_parquet(tmp_path / "r" / "cases")
    assert sorted(df["mu"]) == [-2.0, 0.1, 0.4]
    assert json.loads((tmp_path / "r" / "study.json").read_text())["model"] == "disk_ramp"
    ref = DiskAnalytic({**DEFAULTS, "mu": 0.4}, 1.0)
    got = df.set_index("mu").loc[0.4, "first_entry_rolling"]
    assert got == pytest.approx(ref.events[0][0], abs=1e-9)
    before = sorted((tmp_path / "r" / "cases").glob("*.parquet"))
    proc = subprocess.run(cmd[:-2], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "cases done" not in proc.stderr    # nothing left to run
    assert sorted((tmp_path / "r" / "cases").glob("*.parquet")) == before


# ------------------------------------------------------------------ the plot (issue 29)
def test_the_sweep_plot_shows_nan_cases_counts_and_every_varied_name():
    """A synthetic results table (no run): mu against the never-entered mode's first entry
    (NaN below mu = 0.1, as a disk that never rolls), coloured by J, in one column per value
    of r; a failed case.  The figure says so: grey triangles at the bottom edge with the
    legend "never reached", the failed case's code, integer ticks on the event count, the
    model's name (not its path) in the title and one column of panels per r."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from fmu_src.host.study_plot import figure

    rows = []
    for r in (0.25, 0.5):
        for J in (0.1, 0.2):
            for mu in (0.05, 0.08, 0.2, 0.4):
                rows.append({"mu": mu, "J": J, "r": r, "status": 0, "events": 1 + (mu > 0.1),
                             "first_entry_rolling": math.nan if mu < 0.1 else 0.2 / mu})
    rows.append({"mu": -1.0, "J": 0.1, "r": 0.25, "status": 9, "events": math.nan,
                 "first_entry_rolling": math.nan})
    df = pd.DataFrame(rows)
    fig = figure(df, ["mu", "J", "r"], ["events", "first_entry_rolling"], "/tmp/x/disk_ramp.fmu")
    try:
        assert fig._suptitle.get_text() == "disk_ramp: 17 cases, 1 failed"
        panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
        assert len(panels) == 2 * 2                          # 2 summaries x 2 values of r
        assert [ax.get_title() for ax in panels[:2]] == ["r = 0.25", "r = 0.5"]
        legend = [t.get_text() for ax in panels for lg in [ax.get_legend()] if lg
                  for t in lg.get_texts()]
        assert sorted(legend) == ["failed (status code)", "never reached (NaN)"]
        nan_marks = sum(len(c.get_offsets()) for ax in panels[2:] for c in ax.collections
                        if c.get_offsets().size and (c.get_offsets()[:, 1] == 0).all())
        assert nan_marks == 2 * 2 * 2                        # mu < 0.1, for 2 J and 2 r
        assert any(t.get_text() == "9" for t in panels[2].texts)
        ticks = panels[0].get_yticks()
        assert all(float(t).is_integer() for t in ticks)
        assert any(c.get_label() == "<colorbar>" or "J" in c.get_ylabel() for c in fig.axes)
    finally:
        plt.close(fig)


def test_a_sweep_with_nothing_failed_does_not_suggest_rerunning(tmp_path):
    cmd = [sys.executable, "-m", "fmu_src.host.cli", "sweep", "disk_ramp", "--vary", "mu=0.2",
           "--stop-time", "0.1", "--workers", "1", "--out", str(tmp_path / "r")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "1 ok, 0 failed" in proc.stderr and "--rerun-failed" not in proc.stderr
