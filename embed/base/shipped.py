"""What ``embed-fmu build`` forms once, shipped in a file and loaded by every instance (issue 30).

A shipped file is a pickle (cloudpickle: a scenario's reset maps are often closures of its
``build()``) behind a one-line JSON header naming its key and the SHA-256 and size of the
pickle.  ``read`` refuses a file whose key differs (another model, other package versions,
another CPU for object code) or whose bytes do not hash to the header's digest (corrupt or
truncated) before anything is unpickled, and says why; the caller then forms and compiles as
without the file.  Keys (``key``): the model's digest (``sources_digest``: the bytes of every
module that travels with it), its name and build options, the versions of Python and the
packages the formed objects come from and, for object code, the LLVM version and the host
CPU's identity and features (``environment``, read cheaply: ``host_facts``).
"""

from __future__ import annotations

import functools
import io
import json
import os
import pickle
import sys
from importlib.util import source_hash
from pathlib import Path

from . import host_facts, pickled_functions
from .bundle import SOURCE_HASHES
from .sha import sha256

MAGIC = b"embed-shipped 1\n"
PACKAGES = ("numpy", "scipy", "sympy", "symengine", "llvmlite", "cloudpickle")
FOLDER = "formed"               # under the FMU's resources
KANE_FILE = "kane.pkl"          # Kane's terms in sympy (embed.model.kane_terms): model key
OBJECTS_FILE = "objects.pkl"    # the compiled mode libraries: model key + CPU key
IMAGE_FILE = "image.pkl"        # the scenario without symbols (embed.interface.image): model key


@functools.lru_cache(maxsize=None)
def _environment(cpu: bool) -> dict:
    """The versions formed objects depend on; with ``cpu``, also LLVM's and the host CPU's
    identity and features (object code runs only where those match).  Read from files
    already on disk (``host_facts``), nothing imported."""
    env = {"python": sys.version.split()[0]}
    for p in PACKAGES:
        env[p] = host_facts.version(p)
    if cpu:
        env["llvm"] = host_facts.llvm()
        env.update(host_facts.cpu())
    return env


def environment(cpu: bool) -> dict:
    """The versions formed objects depend on; with ``cpu``, also LLVM's and the host CPU's
    name and features (object code runs only where those match).  Once per process."""
    return dict(_environment(bool(cpu)))


def sources_digest(root, packages) -> str:
    """SHA-256 over the relative paths and source hashes of every ``.py`` file of the folders
    ``packages`` under ``root`` (the modules an FMU carries; renamed packages included), in
    the order of their paths' parts (as sorted ``Path``s).  A file's source hash is PEP 552's
    (``importlib.util.source_hash``, SipHash: what the import system trusts to match
    checked-hash bytecode to its source), 0.3 ms for an FMU's 0.8 MB of modules where
    SHA-256 over the bytes took 4 ms of every start.  Walked with ``os.scandir``:
    ``Path.rglob`` took most of its 16 ms at every FMU's start.  The hash of a file this
    process imported through its bundle is the one the import computed
    (``bundle.SOURCE_HASHES``): about 100 files not read twice, 1 ms of a start."""
    h = sha256()
    root = os.path.abspath(root)
    for pkg in sorted(packages):
        for parts in sorted(_py_files(os.path.join(root, pkg), (pkg,))):
            path = "/".join(parts)
            where = os.path.join(root, *parts)
            digest = SOURCE_HASHES.get(where)
            if digest is None:
                with open(where, "rb") as f:
                    digest = source_hash(f.read())
            h.update(path.encode() + b"\0" + digest + b"\0")
    return h.hexdigest()


def _py_files(folder: str, parts: tuple) -> list:
    """The relative parts of the ``*.py`` files under ``folder`` (``parts``), outside any
    ``__pycache__``."""
    out = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for e in entries:
        if e.name == "__pycache__":
            continue
        if e.is_dir():          # (into a symbolic link's folder no more than rglob)
            if not e.is_symlink():
                out.extend(_py_files(e.path, parts + (e.name,)))
        elif e.name.endswith(".py"):
            out.append(parts + (e.name,))
    return out


def key(name: str, options: dict, digest: str, cpu: bool) -> dict:
    """The key of a shipped file: what it was formed from and where its objects run."""
    return {"model": name, "options": {k: options[k] for k in sorted(options)},
            "sources": digest, **environment(cpu)}


def write(path, file_key: dict, obj, payload: bytes = None) -> int:
    """Pickle ``obj`` into ``path`` behind its header (written whole, then renamed into
    place), or write ``payload``, a pickle made elsewhere; returns the pickle's size in
    bytes."""
    if payload is None:
        import cloudpickle
        payload = cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    header = {"key": file_key, "sha256": sha256(payload).hexdigest(),
              "size": len(payload)}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_bytes(MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload)
    tmp.replace(path)
    return len(payload)


def read(path, file_key: dict, persistent=None):
    """(object, None) from the shipped file ``path``, or (None, why it was refused): absent,
    not a shipped file, formed for another key (the first differing entry named), or its
    bytes not those its header hashed.  Nothing is unpickled before the digest matched.
    ``persistent``: {persistent id: object} of a pickle that names objects of the loading
    process (``persistent_pickle``)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, f"{path.name} could not be read ({exc.strerror or exc})"
    if not data.startswith(MAGIC):
        return None, f"{path.name} is not a shipped file"
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC):end])
        want_sha, want_size, their_key = header["sha256"], header["size"], header["key"]
    except (ValueError, KeyError, TypeError):
        return None, f"{path.name}: its header is unreadable"
    if their_key != file_key:
        diff = sorted(k for k in set(their_key) | set(file_key)
                      if their_key.get(k) != file_key.get(k))
        what = diff[0] if diff else "?"
        return None, (f"{path.name} was formed for another {what} ({their_key.get(what)!r:.60}, "
                      f"here {file_key.get(what)!r:.60})")
    payload = data[end + 1:]
    if len(payload) != want_size or sha256(payload).hexdigest() != want_sha:
        return None, (f"{path.name} is corrupt or truncated ({len(payload)} of {want_size} "
                      "bytes, or its SHA-256 differs from its header's): refused, not loaded")
    try:
        return _Loader(io.BytesIO(payload), persistent).load(), None
    except Exception as exc:  # noqa: BLE001 - a module it names is gone, say: form anew
        return None, f"{path.name} did not load ({type(exc).__name__}: {exc})"


def persistent_pickle(obj, named: dict) -> bytes:
    """``obj`` pickled (cloudpickle) with the objects of ``named`` ({persistent id: object})
    left out, by their ids: the loading process gives its own (``read``'s ``persistent``;
    the mode libraries' model: the loading scenario's, its image's or the real one)."""
    import cloudpickle
    ids = {id(v): k for k, v in named.items()}

    class Pickler(cloudpickle.Pickler):
        def persistent_id(self, o):
            return ids.get(id(o))

    buf = io.BytesIO()
    Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


class _Loader(pickle.Unpickler):
    """Loads a shipped pickle: the objects of the loading process it names by persistent
    id (``persistent``), and cloudpickle's reconstructors of functions answered without
    importing cloudpickle where ``pickled_functions`` can (8-10 ms of an FMU's start)."""

    def __init__(self, file, persistent=None):
        super().__init__(file)
        self.persistent = persistent or {}
        self.answers = pickled_functions.answers()

    def find_class(self, module, name):
        found = pickled_functions.find_class(module, name) if self.answers else None
        return found if found is not None else super().find_class(module, name)

    def persistent_load(self, pid):
        try:
            return self.persistent[pid]
        except KeyError:
            raise pickle.UnpicklingError(f"the loading process has no {pid!r}") from None


def tag_of(package: str) -> str:
    """The build's tag of a renamed package (``embed_ab12`` -> ``_ab12``; ``embed`` -> "")."""
    root = package.split(".")[0]
    for base in ("embed", "scenarios", "fmu_src"):
        if root.startswith(base):
            return root[len(base):]
    return ""


def model_key(root, name: str, options: dict, tag: str, cpu: bool) -> dict:
    """The key of the files formed for scenario ``name`` with build ``options`` from the
    packages (renamed by ``tag``) under ``root``."""
    packages = [p + tag for p in ("embed", "scenarios", "fmu_src") if (Path(root) / (p + tag)).is_dir()]
    return key(name, options, _digest(str(root), tuple(packages)), cpu)


@functools.lru_cache(maxsize=16)
def _digest(root: str, packages: tuple) -> str:
    """``sources_digest`` once per process and folder: the image, Kane's terms and the
    object code are keyed by it at one instantiate."""
    return sources_digest(root, packages)


def load_objects(root, name: str, options: dict, tag: str, model=None):
    """({embedding path: ModeLibrary} shipped under ``root``/formed for this CPU, notes);
    (None, notes) if it does not load.  ``notes`` say why a file present was refused
    (nothing when there is no folder: a model run from its sources).  ``model``: the
    loading scenario's, which the libraries' compiled terms name (``persistent_pickle``)."""
    folder = Path(root) / FOLDER
    if not folder.is_dir():
        return None, []
    got, why = read(folder / OBJECTS_FILE, model_key(root, name, options, tag, cpu=True),
                    {"model": model})
    if got is not None:
        return got, []
    return None, [f"shipped object code not used: {why}; compiling as without it"]


def load_kane(root, name: str, options: dict, tag: str):
    """(Kane's terms as ``embed.model.kane_terms.recording`` collected them, notes) shipped
    under ``root``/formed, or (None, notes): ``build()`` under ``kane_terms.shipped`` of them
    forms the model bit for bit as a fresh build, without deriving Kane's equations."""
    folder = Path(root) / FOLDER
    if not folder.is_dir():
        return None, []
    terms, why = read(folder / KANE_FILE, model_key(root, name, options, tag, cpu=False))
    if terms is None:
        return None, [f"shipped Kane's terms not used: {why}; deriving them"]
    return terms, []


def load_image(root, name: str, options: dict, tag: str):
    """(the scenario image ``embed.interface.image.freeze`` wrote, notes) shipped under
    ``root``/formed, or (None, notes) with why a file present was refused."""
    folder = Path(root) / FOLDER
    if not (folder / IMAGE_FILE).is_file():
        return None, []
    image, why = read(folder / IMAGE_FILE, model_key(root, name, options, tag, cpu=False))
    if image is None:
        return None, [f"shipped scenario image not used: {why}; building the scenario"]
    return image, []
