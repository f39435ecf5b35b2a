import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# the engine runner's cache of compiled modes (embed.modes.cache) is off for the suite, in
# this process and the ones it starts: every test compiles what it runs, as on a clean
# machine, and nothing is written into the user's ~/.cache (tests/test_cache.py turns it on
# in folders of its own)
os.environ["EMBED_CACHE"] = "off"


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory):
    """Every scenario FMU, built once per test session with build_fmu.py (or, with
    EMBED_TEST_FMUS set, the folder it names, holding FMUs built from this tree)."""
    import os
    if os.environ.get("EMBED_TEST_FMUS"):
        return Path(os.environ["EMBED_TEST_FMUS"])
    import build_fmu
    out = tmp_path_factory.mktemp("fmus")
    build_fmu.main(["--all", "--out", str(out)])
    return out


@pytest.fixture(scope="session")
def disk_fmu(fmu_dir):
    return str(fmu_dir / "disk_ramp.fmu")


@pytest.fixture(scope="module")
def belt():
    """pendulum_belt's scenario (engine-level tests)."""
    from scenarios import pendulum_belt
    return pendulum_belt.build()


@pytest.fixture(scope="module")
def crank():
    """slider_crank3's scenario (engine-level tests)."""
    from scenarios import slider_crank3
    return slider_crank3.build()
