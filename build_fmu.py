"""Build FMUs: a thin alias of ``embed-fmu build`` (fmu_src/host/cli.py, fmu_src/builder/build.py).

    python build_fmu.py disk_ramp --out DIR                   # writes DIR/disk_ramp.fmu
    python build_fmu.py --all --out DIR                       # every scenario, and pi_controller
    python build_fmu.py pendulum_chain --set N=20 --out DIR   # a build option
    python build_fmu.py path/to/my_model.py --out DIR         # your own model file
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))     # this copy's packages first

from fmu_src.builder.build import EXPERIMENTS, OTHERS, build  # noqa: E402,F401  (benchmarks call build)
from fmu_src.host.cli import main as _cli  # noqa: E402


def main(argv=None) -> int:
    """``embed-fmu build`` with these arguments; raises SystemExit on a failure."""
    status = _cli(["build", *(sys.argv[1:] if argv is None else argv)])
    if status:
        raise SystemExit(status)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
