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

import threading
import time
from pathlib import Path

from embed.base import shipped

ROOT = Path(__file__).resolve().parents[2]       # the FMU's resources (or the source tree)
TAG = shipped.tag_of(__name__)
HELPERS_FILE = "helpers.pkl"    # the LLVM helpers' object code (embed.codegen.native): + CPU key
_LOCK = threading.RLock()


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
        sim.warm_up()        # as the FMU's initialization: every mode's entry terms
        sim.advance(until)
    except Exception as exc:  # noqa: BLE001 - ship what was compiled before it stopped
        log(f"{name}: the default run stopped at build time ({type(exc).__name__}: {exc}); "
            "shipping the modes compiled until then")
    objects = library.picklable()
    dropped = _dropped(library, objects)
    if dropped:
        log(f"{name}: no scenario image (its FMU would build the scenario at the start): the "
            f"object code cannot carry {dropped}")
    if sc.extension is None and not dropped:
        sizes[shipped.IMAGE_FILE] = shipped.write(
            folder / shipped.IMAGE_FILE, shipped.model_key(root, name, options, TAG, cpu=False),
            None, _image(sc))
    from embed.codegen import native
    if native.built_helpers():      # loaded by the run's programs: shipped, not built at start
        sizes[HELPERS_FILE] = shipped.write(
            folder / HELPERS_FILE, shipped.model_key(root, name, options, TAG, cpu=True),
            native.built_helpers())
    sizes[shipped.OBJECTS_FILE] = shipped.write(
        folder / shipped.OBJECTS_FILE, shipped.model_key(root, name, options, TAG, cpu=True),
        None, shipped.persistent_pickle({embedding: objects},
                                        {"model": sc.automaton.model}))
    log(f"{name}: formed and compiled for shipping in {time.perf_counter() - started:.1f} s "
        f"({', '.join(f'{k} {v / 1e3:.0f} kB' for k, v in sizes.items())})")
    return folder


def _dropped(library, objects) -> str:
    """What the default run compiled that the object code ``objects`` (``ModeLibrary.
    picklable``) leaves out, named; "" if nothing."""
    from embed.modes.library import SYMBOLIC
    out = []
    for slot in type(library).__slots__:
        mine, theirs = getattr(library, slot), getattr(objects, slot)
        if slot in SYMBOLIC + ("lock", "submitted"):
            continue
        if isinstance(mine, dict):
            out += [f"{slot} {k}" for k in mine if k not in theirs]
        elif mine is not None and theirs is None:
            out.append(slot)
    return ", ".join(out)


def _image(sc) -> bytes:
    """The scenario's image (``embed.interface.image``) with what the stepping asks of its
    symbols answered now: whether each constraint's B moves (``moving_B``, kept in it) and
    the outputs' dependence on the inputs (``derivatives.output_dependence``)."""
    from embed.interface import image
    from embed.model.constraints import moving_B
    from fmu_src.runtime import derivatives
    for c in sc.automaton.constraints.values():
        moving_B(sc.automaton.model, [c])
    return image.freeze(sc, {"dependence": derivatives.output_dependence(sc)})


def load(name: str, options: dict):
    """(scenario, notes, dependence): the scenario's shipped image (``embed.interface.image``:
    no symbols, neither sympy nor the scenario's module imported), whose simulators build
    the real scenario (``real``) when they first need symbols, with the outputs' dependence
    on the inputs formed at build time; else (no image, or refused: ``notes`` say why)
    the scenario built from the shipped Kane's terms (bit for bit as a fresh build, without
    deriving them) and None.  The shipped libraries of compiled modes are adopted as the
    ones its simulators share (``ModeLibrary.adopt``)."""
    img, notes = shipped.load_image(ROOT, name, options, TAG)
    dependence = None
    if img is not None:
        from embed.interface.image import Placeholder
        from embed.modes.forming import register_image
        sc, dependence = img["scenario"], img["dependence"]
        register_image(sc.automaton, lambda: real(name, options).automaton,
                       lambda k: Placeholder(k, "Symbol"))
    else:
        sc = build(name, options, notes)
    _load_helpers(name, options, notes)       # before the object code that names them
    libraries, why = shipped.load_objects(ROOT, name, options, TAG, sc.automaton.model)
    notes += why
    if libraries:
        from embed.modes.library import ModeLibrary
        for embedding, library in libraries.items():
            ModeLibrary.adopt(sc.automaton, embedding, library)
            if embedding == "background":   # the start values' simulator steps numeric on
                ModeLibrary.adopt(sc.automaton, "numeric", library)   # it, as the build's run
    return sc, notes, dependence


def _load_helpers(name, options, notes):
    """The LLVM helpers' object code shipped (``HELPERS_FILE``) handed to
    ``embed.codegen.native`` if its key (LLVM, CPU) and hash hold; else why not, to ``notes``
    (the helpers are then built as without it)."""
    path = ROOT / shipped.FOLDER / HELPERS_FILE
    if path.exists():
        got, why = shipped.read(path, shipped.model_key(ROOT, name, options, TAG, cpu=True))
        if got is None:
            notes.append(f"shipped LLVM helpers not used: {why}; building them")
        else:
            from embed.codegen import native
            native.provide_helpers(got)


_REAL = {}      # (name, options) -> the real scenario of an image, built once per process


def real(name: str, options: dict):
    """The scenario built from its sources and the shipped Kane's terms (``build``), once per
    process: what an image's simulators go on with when they need symbols."""
    key = (name, tuple(sorted(options.items())))
    with _LOCK:
        sc = _REAL.get(key)
        if sc is None:
            sc = _REAL[key] = build(name, dict(options))
    return sc


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
