"""Studies at scale (issue 16): a study's cases run on Dask distributed, results in Parquet.

    from fmu_src.host.study import Study
    study = Study("disk_ramp", {"stop_time": 3.0, "parameters": {"mu": [0.1, 0.2, 0.4]},
                                "summaries": ["final_mode", "first_entry:rolling"]},
                  out="runs/mu")
    df = study.run()                 # a LocalCluster, one worker process per core
    df = study.run(scheduler="tcp://host:8786")     # an existing cluster
    study.series(case=2)             # the kept time series

The cases (``fmu_src.host.study_spec``) go to the workers in chunks, one Dask task per chunk
(``fmu_src.host.case_run.run_chunk``); each finished chunk is written at once as a part of the
results folder (``cases/part-N.parquet``: one row per case with its values, summaries,
status and error; ``series/part-N.parquet``: the kept outputs, one row per case and
communication point), so a study that stops resumes where it was: a case already in the
results is not run again, unless asked for by number (``cases=``) or as a failed one
(``rerun_failed=True``); its new row then replaces the old.  ``study.json`` holds the study's
digest: a folder's results are never mixed with another study's.  Without ``out`` the results
stay in memory.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from pathlib import Path

from embed.base.errors import InputError
from fmu_src.host import study_spec
from fmu_src.host.case_run import Plan, run_chunk
from fmu_src.host.study_dask import Progress, connect
from fmu_src.host.study_plan import plan, spec_of
from fmu_src.runtime.status import INTERNAL
from fmu_src.host.study_spec import StudySpec, summary_column


# ------------------------------------------------------------------------------ tables
def _schema(plan_: Plan, spec: StudySpec):
    """The cases table's columns and types (fixed, so every part file agrees)."""
    import pyarrow as pa

    kinds = {"final_mode": pa.int64(), "events": pa.int64(), "impacts": pa.int64(),
             "event_times": pa.list_(pa.float64())}
    fields = [pa.field("case", pa.int64())]
    fields += [pa.field(a.name, pa.float64()) for a in spec.axes]
    for s in plan_.summaries:
        fields.append(pa.field(summary_column(s), kinds.get(s.partition(":")[0], pa.float64())))
    fields += [pa.field("status", pa.int64()), pa.field("error", pa.string()),
               pa.field("t_reached", pa.float64()), pa.field("seconds", pa.float64())]
    return pa.schema(fields)


def _series_table(series: list, outputs):
    """The kept time series as one long table: case, time, then the outputs."""
    import numpy as np
    import pyarrow as pa

    cols = {"case": pa.array(np.concatenate([np.full(len(s["time"]), n) for n, s in series]),
                             pa.int64())}
    for name in ("time",) + tuple(outputs):
        cols[name] = pa.array(np.concatenate([s[name] for _, s in series]), pa.float64())
    return pa.table(cols)


class Study:
    """A study of ``model`` (a bundled scenario, a model file or an .fmu): the cases of
    ``spec`` (a StudySpec, a dict of the TOML keys, or a TOML file), run on Dask, kept in
    the folder ``out`` (Parquet; None: in memory).  ``run`` returns the results as a pandas
    DataFrame, one row per case."""

    def __init__(self, model, spec=None, out=None):
        self.model = str(model)
        self.spec = spec_of(spec)
        self.out = None if out is None else Path(out)
        self._memory = []          # (cases table, series table or None) without ``out``
        self._tmp = None
        self._next_part = None     # the number of the next part file written
        # the latest run's figures: cases, tasks, busy and cpu (s inside the tasks), wall (s)
        self.last_run = {}
        fmu_dir = None
        if self.spec.runner == "fmu" and not self.model.endswith(".fmu"):
            if self.out is not None:
                fmu_dir = self.out / "fmu"
            else:
                self._tmp = tempfile.TemporaryDirectory(prefix="embed_study_")
                fmu_dir = self._tmp.name
        self.plan = plan(self.model, self.spec, fmu_dir)
        self.schema = _schema(self.plan, self.spec)
        self._cases = study_spec.cases(self.spec)
        if self.out is not None:
            self._claim()

    def __repr__(self):
        return f"Study({self.model!r}, {len(self._cases)} cases, out={self.out})"

    def _claim(self):
        """Write study.json in a new folder; refuse a folder of another study."""
        self.out.mkdir(parents=True, exist_ok=True)
        meta = self.out / "study.json"
        mine = {"model": self.model, "runner": self.plan.runner, "key": self.spec.key(),
                "study": json.loads(self.spec.to_json())}
        if meta.is_file():
            theirs = json.loads(meta.read_text())
            if (theirs.get("key"), theirs.get("model")) != (mine["key"], mine["model"]):
                raise InputError(f"{self.out} holds the results of another study (model "
                                 f"{theirs.get('model')!r}, study {theirs.get('study')}); give "
                                 "another results folder or delete that one")
        else:
            meta.write_text(json.dumps(mine, indent=1))

    # ---------------------------------------------------------------- views
    def cases(self):
        """The cases as a DataFrame (case, then the varied names), run or not."""
        import pandas as pd
        return pd.DataFrame([{"case": i, **v} for i, v in self._cases],
                            columns=["case"] + [a.name for a in self.spec.axes])

    def _parts(self, kind: str) -> list:
        if self.out is None:
            return [t for t in (p[0 if kind == "cases" else 1] for p in self._memory)
                    if t is not None]
        import pyarrow.parquet as pq
        return [pq.read_table(p) for p in sorted((self.out / kind).glob("part-*.parquet"))]

    def results(self):
        """One row per case run so far (the latest run of a case re-run), by case number."""
        import pandas as pd
        import pyarrow as pa

        parts = self._parts("cases")
        table = pa.concat_tables(parts) if parts else self.schema.empty_table()
        # integers stay integers where a failed case has none (pandas' nullable Int64)
        df = table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
        df = df.drop_duplicates("case", keep="last").sort_values("case")
        return df.reset_index(drop=True)

    def series(self, case=None):
        """The kept time series (case, time, outputs), of one case or of all (of a case run
        more than once, its latest run)."""
        import pandas as pd

        parts = [t.to_pandas() for t in self._parts("series")]
        if not parts:
            return pd.DataFrame(columns=["case", "time", *self.plan.outputs])
        latest = {int(n): k for k, d in enumerate(parts) for n in d["case"].unique()}
        df = pd.concat([d[d["case"].map(latest) == k] for k, d in enumerate(parts)])
        if case is not None:
            df = df[df["case"] == case]
        return df.sort_values(["case", "time"], kind="stable").reset_index(drop=True)

    # ---------------------------------------------------------------- running
    def pending(self, cases=None, rerun_failed=False) -> list:
        """The cases to run: those not in the results, or the numbers ``cases`` (run again
        even if done), plus the failed ones if ``rerun_failed``."""
        done = self.results()
        if cases is not None:
            wanted = set(int(c) for c in cases)
            bad = sorted(c for c in wanted if not 0 <= c < len(self._cases))
            if bad:
                raise InputError(f"cases {bad}: the study has cases 0 to {len(self._cases) - 1}")
        else:
            wanted = {i for i, _ in self._cases} - set(done["case"])
        if rerun_failed:
            wanted |= set(done.loc[done["status"] != 0, "case"])
        return [c for c in self._cases if c[0] in wanted]

    def run(self, client=None, scheduler=None, workers=None, chunk=None, cases=None,
            rerun_failed=False, progress=True):
        """Run the pending cases (``pending``) on Dask and return ``results()``.

        Parameters
        ----------
        client : distributed.Client, optional
            Run on its cluster (left running).
        scheduler : str, optional
            The address of an existing cluster's scheduler (tcp://host:8786).
        workers : int, optional
            Worker processes of the LocalCluster started otherwise (default: one per core,
            one thread each, so the FMUs run in parallel).
        chunk : int, optional
            Cases per task (default: about four tasks per worker, at most 50 cases each).
        cases, rerun_failed
            See ``pending``.
        progress : bool
            Print cases done, failed, rate and time left on stderr.
        """
        todo = self.pending(cases, rerun_failed)
        if not todo:
            return self.results()
        own = None
        if client is None:
            client, own = connect(scheduler, workers)
        try:
            n_workers = max(1, len(client.scheduler_info(n_workers=-1)["workers"]))
            size = chunk or max(1, min(50, math.ceil(len(todo) / (4 * n_workers))))
            if size < 1:
                raise InputError(f"chunk = {size}: give a number of cases >= 1")
            self._dispatch(client, todo, int(size), Progress(len(todo), progress))
        finally:
            for thing in own or ():
                thing.close()
        return self.results()

    def _dispatch(self, client, todo, size, prog):
        from distributed import as_completed

        chunks = [todo[k:k + size] for k in range(0, len(todo), size)]
        started = time.perf_counter()
        self.last_run = {"cases": len(todo), "tasks": len(chunks), "busy": 0.0, "cpu": 0.0,
                         "wall": 0.0}
        futures = {client.submit(run_chunk, self.plan, c, pure=False): c for c in chunks}
        for fut in as_completed(futures):
            chunk = futures.pop(fut)
            if fut.status == "error":     # the task itself died (a worker killed): its cases
                exc = fut.exception()
                rows = [{"case": i, **v, "status": INTERNAL, "t_reached": 0.0,
                         "error": f"the task failed: {type(exc).__name__}: {exc}"}
                        for i, v in chunk]
                result = {"rows": rows, "series": []}
            else:
                result = fut.result()
                self.last_run["busy"] += result["busy"]
                self.last_run["cpu"] += result["cpu"]
            fut.release()
            self._write(result)
            prog.update(len(result["rows"]), sum(r["status"] != 0 for r in result["rows"]))
        self.last_run["wall"] = time.perf_counter() - started
        prog.done()

    def _write(self, result):
        """One finished chunk: a part of the cases table (and of the series)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = [{f.name: r.get(f.name) for f in self.schema} for r in result["rows"]]
        table = pa.Table.from_pylist(rows, schema=self.schema)
        series = (_series_table(result["series"], self.plan.outputs)
                  if result["series"] else None)
        if self.out is None:
            self._memory.append((table, series))
            return
        (self.out / "cases").mkdir(exist_ok=True)
        if self._next_part is None:
            self._next_part = 1 + max((int(p.stem[5:]) for p in
                                       (self.out / "cases").glob("part-*.parquet")), default=0)
        name = f"part-{self._next_part:06d}.parquet"
        self._next_part += 1
        if series is not None:                 # the series first: a case row means it is done
            (self.out / "series").mkdir(exist_ok=True)
            _atomic(pq.write_table, series, self.out / "series" / name)
        _atomic(pq.write_table, table, self.out / "cases" / name)


def _atomic(write, table, path: Path):
    tmp = path.with_suffix(".tmp")
    write(table, tmp)
    os.replace(tmp, path)


__all__ = ["Study", "plan", "spec_of", "Progress"]
