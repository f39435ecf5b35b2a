"""A C master's start (issue 30): the loader's interpreter query (`python -c QUERY`, a whole
Python start) is answered from the cache folder when nothing it depends on changed
(fmu_src/runtime/loader/python_query.c): the same results; a stamp that no longer holds or
a damaged file makes it ask the interpreter again and write the file anew; an answer naming
a missing package is never kept; EMBED_CACHE=off keeps nothing."""

import re

import pytest

import masters
from test_masters import bare_python  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(not masters.MASTERS.is_dir(),
                                reason=f"the C/C++ masters are not at {masters.MASTERS}")


def run(fmu_dir, where, cache, **env):
    """fmusim on disk_ramp for 0.05 s with the cache folder ``cache``: its CSV's text."""
    proc, out = masters.simulate("fmusim", fmu_dir / "disk_ramp.fmu", where, stop=0.05,
                                 step=0.01, EMBED_CACHE=str(cache), **env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]
    return out.read_text()


def kept(cache):
    return sorted(cache.glob("python-*.query"))


def test_the_answer_is_kept_and_used_while_it_holds(fmu_dir, tmp_path):
    cache = tmp_path / "cache"
    first = run(fmu_dir, tmp_path / "a", cache)
    files = kept(cache)
    assert len(files) == 1
    data = files[0].read_bytes()
    key, stamps, answer = data.split(b"\0")
    assert b"\nexe=" in key and b"requirements:\nnumpy" in key
    lines = answer.decode().splitlines()
    assert len(lines) == 7 and lines[0].endswith(tuple(f".so.1.{i}" for i in range(10)) + (".so",))
    # every sys.path folder that exists is stamped with its time, size and inode
    for p in lines[4].split(":"):
        assert re.search(rb"\n?" + re.escape(p.encode()) + rb"\t(-|\d+\.\d{9} \d+ \d+)\n", stamps)
    assert run(fmu_dir, tmp_path / "b", cache) == first       # answered from the file
    assert files[0].read_bytes() == data

    # a stamp that no longer holds (as a package installed since would make it): asked
    # again, the file written anew with the stamps as they are
    site = next(p for p in lines[4].split(":") if p.endswith("site-packages")).encode()
    stale = re.sub(re.escape(site) + rb"\t\d+", site + b"\t12345", data)
    assert stale != data
    files[0].write_bytes(stale)
    assert run(fmu_dir, tmp_path / "c", cache) == first
    assert files[0].read_bytes() == data

    files[0].write_bytes(data[: len(data) // 2])               # truncated
    assert run(fmu_dir, tmp_path / "d", cache) == first
    assert files[0].read_bytes() == data

    # another environment the answer depends on: another key, another file
    assert run(fmu_dir, tmp_path / "e", cache, PYTHONNOUSERSITE="1") == first
    assert len(kept(cache)) == 2

    # ``embed-fmu cache --clear`` removes them, and a write a process left half done
    from embed.base import cache_files
    (cache / (files[0].name + ".999999.tmp")).write_bytes(data[:10])
    assert cache_files.clear(cache) == 3 and not list(cache.iterdir())


def test_nothing_kept_when_off_or_a_package_is_missing(fmu_dir, tmp_path,
                                                       bare_python):  # noqa: F811
    off = tmp_path / "off"
    run(fmu_dir, tmp_path / "a", "off", HOME=str(off), XDG_CACHE_HOME=str(off))
    assert not off.exists()
    cache = tmp_path / "cache"
    proc, _ = masters.simulate("fmusim", fmu_dir / "disk_ramp.fmu", tmp_path / "b", stop=0.05,
                               EMBED_CACHE=str(cache), EMBED_PYTHON=str(bare_python))
    assert proc.returncode != 0 and "lacks the package(s)" in proc.stdout + proc.stderr
    assert not kept(cache)
