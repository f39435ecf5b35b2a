"""Instantiate/free cycles in one process free their instances (issue 10: 0.1 MB a cycle).

Counted in Python objects, not bytes: a freed instance leaves none of its own behind (its
variables, getters, simulator and class), whatever the allocator keeps."""

import subprocess
import sys

SCRIPT = r'''
import gc, sys
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave
fmu = sys.argv[1]
md = read_model_description(fmu)
s = FMU2Slave(guid=md.guid, unzipDirectory=extract(fmu),
              modelIdentifier=md.coSimulation.modelIdentifier, instanceName="x")
def cycle():
    s.instantiate()
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    s.doStep(0.0, 0.01)
    s.terminate()
    s.freeInstance()
def live():
    gc.unfreeze()
    gc.collect()
    return len(gc.get_objects())
for _ in range(20):
    cycle()
a = live()
for _ in range(100):
    cycle()
print((live() - a) / 100)
'''


def test_freed_instances_leave_no_objects(disk_fmu):
    out = subprocess.run([sys.executable, "-c", SCRIPT, disk_fmu], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    per_cycle = float(out.stdout.split()[-1])
    # an instance is hundreds of objects; pythonfmu's binary keeps a small list (a class's mro)
    # for each of the entry module's four classes at every fmi2Instantiate
    assert per_cycle <= 4.0, per_cycle
