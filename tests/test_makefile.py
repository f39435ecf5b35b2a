"""The quick start's installer says what it does (issue 29): ``make`` prints what is being
installed and how long it takes, and pip's own progress (each package collected) is shown,
not silenced.  Read from make's dry run (-n: nothing is installed)."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_installer_announces_itself_and_pip_shows_its_progress(tmp_path):
    venv = tmp_path / "venv"
    # run under `make test` (CI), a nested make would print "Entering directory" first
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    proc = subprocess.run(["make", "--no-print-directory", "-n", "-B", f"VENV={venv}",
                           f"{venv}/.installed"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("echo") and "installing" in lines[0] \
        and "a minute or two" in lines[0]
    install = [line for line in lines if "pip install" in line and "-e" in line]
    assert len(install) == 1
    assert "--quiet" not in install[0].split() and "-q" not in install[0].split()
    assert any("installed into" in line for line in lines[lines.index(install[0]):])
