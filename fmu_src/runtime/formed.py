"""The model formed at ``embed-fmu build`` and the modes compiled there, shipped (issue 30).

``form`` runs at build time, in the build's renamed packages: it builds the scenario,
recording Kane's terms F_r, F_r* (gillespie2005 eq 1-4) as sympy (``embed.model.kane_terms``)
into resources/formed/kane.pkl, then runs the scenario's default simulator over the FMU's
default experiment, so that every mode it reaches without run-time geometry is embedded and
compiled (and, for ``precompile`` scenarios, every mode and partition), and writes its mode
libraries' object code (no symbolic expression: ``ModeLibrary.picklable``) to
resources/formed/objects.pkl.  ``load``
reads them at fmi2Instantiate; the background worker reads kane.pkl (``embed.background.
worker``).  A file formed for another model, package versions or CPU, or a corrupt one, is
refused by its key or hash (``embed.base.shipped``) and the FMU forms and compiles as without
it, saying why in its log.
"""

from __future__ import annotations

import time
from pathlib import Path

from embed.base import shipped

ROOT = Path(__file__).resolve().parents[2]       # the FMU's resources (or the source tree)
TAG = shipped.tag_of(__name__)


def form(name: str, options: dict, root, until: float, log=print) -> Path:
    """Write ``root``/formed/{kane,objects}.pkl for scenario ``name`` built with ``options``
    (``root``: the staged resources, holding the renamed packages); the default simulator
    runs to ``until`` s first.  Returns the folder written."""
    import scenarios
    from embed.model import kane_terms
    from embed.modes.library import ModeLibrary
    started = time.perf_counter()
    with kane_terms.recording() as terms:
        sc = scenarios.load(name).build(**options)
    folder = Path(root) / shipped.FOLDER
    sizes = {shipped.KANE_FILE: shipped.write(
        folder / shipped.KANE_FILE, shipped.model_key(root, name, options, TAG, cpu=False),
        terms)}
    embedding = sc.embedding
    # the background path steps on the compiled-terms (numeric) path until its worker
    # answers: that is what its library holds at start
    library = ModeLibrary.of(sc.automaton, embedding)
    try:
        sim = sc.simulator(embedding="numeric" if embedding == "background" else embedding,
                           library=library)
        sim.advance(until)
    except Exception as exc:  # noqa: BLE001 - ship what was compiled before it stopped
        log(f"{name}: the default run stopped at build time ({type(exc).__name__}: {exc}); "
            "shipping the modes compiled until then")
    sizes[shipped.OBJECTS_FILE] = shipped.write(
        folder / shipped.OBJECTS_FILE, shipped.model_key(root, name, options, TAG, cpu=True),
        {embedding: library.picklable()})
    log(f"{name}: formed and compiled for shipping in {time.perf_counter() - started:.1f} s "
        f"({', '.join(f'{k} {v / 1e3:.0f} kB' for k, v in sizes.items())})")
    return folder


def load(name: str, options: dict):
    """(scenario, notes): the scenario built from the shipped Kane's terms (bit for bit as a
    fresh build, without deriving them), with the shipped libraries of compiled modes
    adopted as the ones its simulators share (``ModeLibrary.adopt``)."""
    libraries, notes = shipped.load_objects(ROOT, name, options, TAG)
    sc = build(name, options, notes)
    if libraries:
        from embed.modes.library import ModeLibrary
        for embedding, library in libraries.items():
            ModeLibrary.adopt(sc.automaton, embedding, library)
    return sc, notes


def build(name: str, options: dict, notes=None, root=None, module=None):
    """The scenario built (``module``'s ``build(**options)``; default: the bundled scenario
    ``name``) with Kane's terms shipped under ``root`` (default: here) if they load; why
    they did not goes to ``notes``."""
    from embed.model import kane_terms
    terms, why = shipped.load_kane(root or ROOT, name, options, TAG)
    if notes is not None:
        notes.extend(why)
    if module is None:
        import scenarios
        module = scenarios.load(name)
    with kane_terms.shipped(terms):
        return module.build(**options)
