"""The command line's error contract (issue 29): every wrong argument, every value an FMU or the
engine refuses, every missing file: one message naming the thing, exit 1 (the model is wrong)
or 2 (an argument is wrong), never a traceback.  Wrong inputs are listed per command, then
drawn at random (hypothesis) from the commands' own options and hostile values."""

from __future__ import annotations

import contextlib
import io
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fmu_src.host.cli import main


def run(argv) -> tuple[int, str]:
    """``embed-fmu argv`` in this process: (exit status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:                # argparse's own refusals (usage, exit 2)
            code = exc.code
    return code, err.getvalue()


@pytest.fixture(scope="module")
def files(tmp_path_factory, fmu_dir):
    """A text file that is no model, an empty folder, an FMU copy, a bad input CSV."""
    d = tmp_path_factory.mktemp("cli_errors")
    (d / "notes.txt").write_text("not a model\n")
    (d / "empty").mkdir()
    (d / "bad.csv").write_text("time,F_ext\n0,abc\n")
    (d / "nofmu.fmu").write_text("not a zip")
    shutil.copy(fmu_dir / "disk_ramp.fmu", d / "disk_ramp.fmu")
    return d


# (arguments, exit status, words the one message must contain); {d} is the files folder
WRONG = [
    (["check", "nosuch"], 2, ["unknown scenario 'nosuch'"]),
    (["check", "{d}/notes.txt"], 2, ["notes.txt", "not a model"]),
    (["check", "{d}/empty"], 2, ["empty"]),
    (["build", "{d}/nosuch.py"], 2, ["nosuch.py", "no such model file"]),
    (["build"], 2, ["give a MODEL"]),
    (["check", "disk_ramp", "--set", "nosuch=1"], 2, ["nosuch", "parameters"]),
    (["check", "disk_ramp", "--set", "mu"], 2, ["mu"]),
    (["info", "{d}/none.fmu"], 2, ["none.fmu"]),
    (["info", "{d}/nofmu.fmu"], 2, ["nofmu.fmu"]),
    (["simulate", "{d}/disk_ramp.fmu", "--step", "0"], 2, ["--step 0"]),
    (["simulate", "{d}/disk_ramp.fmu", "--stop-time", "nan"], 2, ["--stop-time nan"]),
    (["simulate", "{d}/disk_ramp.fmu", "--set", "mu=abc"], 2, ["mu=abc", "default 0.2"]),
    (["simulate", "{d}/disk_ramp.fmu", "--set", "q1=1"], 2, ["q1", "an output"]),
    (["simulate", "{d}/disk_ramp.fmu", "--outputs", "nope"], 2, ["nope", "not an output"]),
    (["simulate", "{d}/disk_ramp.fmu", "--input", "{d}/none.csv"], 2, ["none.csv"]),
    (["simulate", "{d}/disk_ramp.fmu", "--input", "{d}/bad.csv"], 2, ["bad.csv"]),
    # refused by the FMU itself (fmi2SetReal / fmi2SetString answer fmi2Error): its message
    (["simulate", "{d}/disk_ramp.fmu", "--set", "mu=-3"], 2, ["fmi2SetReal", "mu = -3"]),
    (["simulate", "{d}/disk_ramp.fmu", "--set", "solver=euler"], 2, ["fmi2SetString", "euler"]),
    (["sweep", "nosuch", "--vary", "mu=1,2"], 2, ["unknown scenario"]),
    (["sweep", "{d}/disk_ramp.fmu"], 2, ["nothing to sweep"]),
    (["sweep", "{d}/disk_ramp.fmu", "--vary", "mu=lin("], 2, ["--vary mu"]),
    (["sweep", "{d}/disk_ramp.fmu", "--vary", "mu=1", "--set", "N=2"], 2, ["--set"]),
    (["frobnicate"], 2, ["invalid choice"]),
    (["simulate"], 2, ["MODEL"]),
]


@pytest.mark.parametrize("argv, code, words", WRONG, ids=[" ".join(w[0]) for w in WRONG])
def test_each_wrong_input_is_one_message_and_its_exit_status(files, argv, code, words):
    got, err = run([a.format(d=files) for a in argv])
    assert got == code, err
    assert "Traceback" not in err and "internal error" not in err, err
    for w in words:
        assert w in err, (w, err)


def test_a_missing_optional_package_names_the_extra(files, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyarrow" else real(name, *a))
    code, err = run(["sweep", files / "disk_ramp.fmu", "--vary", "mu=0.1,0.2"])
    assert code == 2 and "pyarrow" in err and "embed-fmu[study]" in err, err


def test_an_unexpected_defect_is_one_line_not_a_traceback(monkeypatch):
    import fmu_src.host.cli as cli
    monkeypatch.setattr(cli, "cmd_list", lambda a: {}["boom"])
    ap = cli.parser()
    monkeypatch.setattr(cli, "parser", lambda: ap)
    for action in ap._subparsers._group_actions[0].choices.values():
        if action.prog.endswith(" list"):
            action.set_defaults(func=cli.cmd_list)
    code, err = run(["list"])
    assert code == 1 and "internal error: KeyError" in err and "Traceback" not in err


COMMANDS = ["list", "build", "check", "info", "simulate", "sweep"]
OPTIONS = ["--set", "--stop-time", "--step", "--input", "--outputs", "--vary", "--out",
           "--plot", "--study", "--cases", "--samples", "--runner", "--solver", "--all"]
HOSTILE = ["", "-1", "nan", "inf", "1e999", "x=1", "=", "mu=", "=3", "mu=__import__('os')",
           "mu=1,2", "a" * 300, "m=-1", "../../etc/passwd", "nosuch", "nosuch.py", "\x00x",
           "{d}/notes.txt", "{d}/none.fmu", "{d}/empty", "--help"]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(COMMANDS[1:]), st.lists(st.sampled_from(OPTIONS + HOSTILE), max_size=6),
       st.sampled_from(["nosuch", "{d}/notes.txt", "{d}/none.fmu", "{d}/empty", "{d}/nosuch.py"]))
def test_random_argument_lists_never_end_in_a_traceback(files, tmp_path, command, rest, model):
    argv = [command, model.format(d=files)] + [a.format(d=files) for a in rest]
    argv = [a.replace("\x00", "") for a in argv]
    with contextlib.chdir(tmp_path):
        code, err = run(argv)
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err and "internal error" not in err, (argv, err)
    if code:
        assert err.strip(), argv                      # a refusal always says why
