"""The documentation builds and its examples run as written (issues 28 and 29).

- docs/ builds with Sphinx with warnings as errors (``sphinx-build -W``): the Markdown pages,
  the API pages autodoc writes from the docstrings and the command line's reference that
  sphinx-argparse writes from its parser, so a broken link, a docstring reST cannot read or a
  page left out of the table of contents fails here.
- Every command block of README.md and docs/*.md fenced as ```sh runs, in order, in a fresh
  copy of docs/examples (README's from the folder above it, as from a clone's root), with an
  ``embed-fmu`` of this checkout first on PATH, and exits 0. Blocks that need what the test
  machine may lack (a real master, a Dask cluster, minutes of compiling) or that show a
  failure are fenced ```console and are not run.
- The example files are the ones the pages show: docs/examples/latch.py is the guide's model
  (tests/user_models/latch/model.py), docs/examples/belt.toml the study of docs/studies.md.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
PAGES = [ROOT / "README.md"] + sorted(DOCS.glob("*.md"))
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)


def blocks(page: Path, lang: str) -> list:
    """The fenced blocks of ``page`` in language ``lang`` (the fence's first word)."""
    return [body for kind, body in FENCE.findall(page.read_text()) if kind == lang]


def env_with_cli(tmp: Path) -> dict:
    """The environment of a reader's shell: ``embed-fmu`` on PATH runs this checkout's command
    line (``python -m fmu_src.host.cli``, which the console script calls) in this interpreter."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    script = bin_dir / "embed-fmu"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m fmu_src.host.cli "$@"\n')
    script.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg",
               PATH=f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
                    f"{os.environ.get('PATH', '')}")
    return env


# ------------------------------------------------------------------------------ the build
def test_docs_build_with_warnings_as_errors(tmp_path):
    for module in ("sphinx", "myst_parser", "numpydoc", "furo", "sphinxarg"):
        pytest.importorskip(module, reason="the docs extra (pip install 'embed-fmu[docs]')")
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                           "-b", "html", str(DOCS), str(out)],
                          capture_output=True, text=True, env=dict(os.environ,
                                                                   PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    api = (out / "api.html").read_text()
    import embed
    for name in embed.__all__:                     # every public name has its entry
        assert f'id="embed.{name}"' in api, name
    cli = (out / "cli.html").read_text()
    from fmu_src.host.cli import parser
    commands = parser()._subparsers._group_actions[0].choices
    for command in commands:                       # every command has its reference
        assert f'id="embed-fmu-{command}"' in cli, command


# ------------------------------------------------------------------ the examples' files
def test_the_examples_latch_is_the_guides_model():
    assert (EXAMPLES / "latch.py").read_text() == \
        (ROOT / "tests" / "user_models" / "latch" / "model.py").read_text(), \
        "docs/examples/latch.py must be a copy of tests/user_models/latch/model.py"


def test_the_studies_page_shows_belt_toml():
    toml = blocks(DOCS / "studies.md", "toml")
    assert toml == [(EXAMPLES / "belt.toml").read_text()]


def test_no_command_escapes_the_fences():
    """A command shown as an indented block would not be run here: every ``embed-fmu`` line
    of the pages stands in a fenced block (```sh, run, or ```console, shown)."""
    for page in PAGES:
        text = FENCE.sub("", page.read_text())
        stray = re.findall(r"^ {4,}\$? ?embed-fmu .*$", text, re.M)
        assert not stray, f"{page.name}: {stray}"


# ------------------------------------------------------------------ the command blocks
RUN = [p for p in PAGES if blocks(p, "sh")]
# what the blocks write (docs/examples/.gitignore): not copied from a reader's own runs
OUTPUTS = ("build", "runs", "sweep", "__pycache__", "*.png", "*.html", "*.gif", "*.svg",
           "run.csv", "latch.csv", "simulation.csv")


def test_the_pages_have_command_blocks():
    names = {p.name for p in RUN}
    assert {"README.md", "guide.md", "cli.md", "studies.md", "fmu.md"} <= names, names


@pytest.mark.parametrize("page", RUN, ids=[p.name for p in RUN])
def test_command_blocks_run_as_written(page, tmp_path):
    """Each ```sh block of the page, in order, in one copy of docs/examples: exit 0."""
    root = tmp_path / "clone"
    shutil.copytree(EXAMPLES, root / "docs" / "examples",
                    ignore=shutil.ignore_patterns(*OUTPUTS))
    cwd = root if page.name == "README.md" else root / "docs" / "examples"
    env = env_with_cli(tmp_path)
    for i, block in enumerate(blocks(page, "sh")):
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (f"{page.name}, block {i + 1} exited {proc.returncode}:\n"
                                      f"{block}\n--- stdout\n{proc.stdout[-3000:]}\n"
                                      f"--- stderr\n{proc.stderr[-3000:]}")
