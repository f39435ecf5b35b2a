"""Step an FMU with libcosim (C++ co-simulation engine) and print its outputs as JSON lines.

    python libcosim_run.py FMU T_END DT [name=value ...]

Run as its own process by the tests: libcosim owns the FMU's lifetime and the
process's exit.
"""

import json
import os
import sys

from libcosimpy.CosimEnums import CosimVariableCausality, CosimVariableType
from libcosimpy.CosimExecution import CosimExecution
from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
from libcosimpy.CosimManipulator import CosimManipulator
from libcosimpy.CosimObserver import CosimObserver
from libcosimpy.CosimSlave import CosimLocalSlave


def main():
    fmu, t_end, dt = os.path.abspath(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    settings = dict(a.split("=", 1) for a in sys.argv[4:])
    log_output_level(CosimLogLevel.WARNING)
    ns = int(round(dt * 1e9))
    ex = CosimExecution.from_step_size(step_size=ns)
    slave = CosimLocalSlave(fmu_path=fmu, instance_name="disk")
    idx = ex.add_local_slave(local_slave=slave)
    assert idx >= 0, "add_local_slave failed"
    info = {v.name.decode(): v for v in ex.slave_variables(idx)}
    vr = {k: v.reference for k, v in info.items()}
    outputs = [k for k, v in info.items() if v.causality == CosimVariableCausality.OUTPUT.value]
    for k, val in settings.items():
        if info[k].type == CosimVariableType.STRING.value:
            assert ex.string_initial_value(idx, vr[k], val)
        else:
            assert ex.real_initial_value(idx, vr[k], float(val))
    obs = CosimObserver.create_last_value()
    ex.add_observer(observer=obs)
    man = CosimManipulator.create_override()
    ex.add_manipulator(manipulator=man)
    ints = [k for k in outputs if info[k].type == CosimVariableType.INTEGER.value]
    reals = [k for k in outputs if info[k].type == CosimVariableType.REAL.value]
    n = int(round(t_end / dt))
    for k in range(n):
        assert ex.step(step_count=1), f"libcosim step {k} failed"
        row = dict(zip(reals, obs.last_real_values(idx, [vr[x] for x in reals])))
        row.update(zip(ints, obs.last_integer_values(idx, [vr[x] for x in ints])))
        row["time"] = (k + 1) * dt
        print(json.dumps(row))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
