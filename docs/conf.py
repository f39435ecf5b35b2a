"""Sphinx configuration: the guide, the reference pages and the API pages from the docstrings.

    sphinx-build -W -b html docs build/docs      # what tests/test_docs.py runs

Markdown pages are read by myst-parser; the API pages (api.md, cli.md's reference) are
written by autodoc from the docstrings (numpydoc sections) and by sphinx-argparse from the
command line's own parser, so neither can fall behind the code.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))            # embed, fmu_src, scenarios of this checkout

project = "embed-fmu"
author = "embed-fmu developers"
copyright = "2026, embed-fmu developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinxarg.ext",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "examples", "img/*.md"]

myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3                 # [text](page.md#a-heading) links resolve

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}
numpydoc_show_class_members = False       # autodoc lists the members; numpydoc the sections
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False

html_theme = "furo"
html_title = "embed-fmu"
html_static_path = []



# The docstrings are plain text for a terminal and write norms as |Phi| or |B u + C|, which
# reST reads as substitution references: escaped here (a table's "| a |" is left alone).
_NORM = re.compile(r"(?<![\w`|\\])\|([A-Za-z][\w +*^()-]*?)\|(?![\w|])")


def _escape_norms(app, what, name, obj, options, lines):
    lines[:] = [_NORM.sub(r"\\|\1\\|", line) for line in lines]


def setup(app):
    app.connect("autodoc-process-docstring", _escape_norms)
