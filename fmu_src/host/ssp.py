"""The SSP co-simulation example: pi_controller.fmu drives disk_ramp.fmu's F_ext so that the
disk's speed u1 reaches the controller's set point.  ``write_ssp`` packs the two FMUs and
their connections as an SSP file (OMSimulator, ecos and fmpy's SSP master run it: ``run_ssp``
is ``fmpy.ssp.simulation.simulate_ssp``); ``run_fmpy`` is the same coupling scripted with
fmpy, kept as the cross-check that records every output of the disk.

    python -m fmu_src.host.ssp DIR     # DIR holds disk_ramp.fmu and pi_controller.fmu: writes
                                  # DIR/speed_control.ssp and prints its run's last row
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

CONNECTIONS = [("disk", "u1", "pi", "measurement"), ("pi", "command", "disk", "F_ext")]
COMPONENTS = {"disk": ("disk_ramp", {"F_ext": "input", "u1": "output"}),
              "pi": ("pi_controller", {"measurement": "input", "command": "output"})}

SSD = """<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:oms="https://raw.githubusercontent.com/OpenModelica/OMSimulator/master/schema/oms.xsd"
    version="1.0" name="speed_control">
  <ssd:System name="root" description="a PI controller drives disk_ramp's F_ext toward a speed">
    <ssd:Elements>
{components}
    </ssd:Elements>
    <ssd:Connections>
{connections}
    </ssd:Connections>
    <ssd:Annotations>
      <ssc:Annotation type="org.openmodelica">
        <oms:Annotations>
          <oms:SimulationInformation>
            <oms:FixedStepMaster description="oms-ma" stepSize="0.01"/>
          </oms:SimulationInformation>
        </oms:Annotations>
      </ssc:Annotation>
    </ssd:Annotations>
  </ssd:System>
  <ssd:DefaultExperiment startTime="0" stopTime="8"/>
</ssd:SystemStructureDescription>
"""


def ssd() -> str:
    comps = []
    for name, (fmu, ports) in COMPONENTS.items():
        conns = "\n".join(f'          <ssd:Connector name="{p}" kind="{k}"><ssc:Real/>'
                          '</ssd:Connector>' for p, k in ports.items())
        comps.append(f'      <ssd:Component name="{name}" type="application/x-fmu-sharedlibrary" '
                     f'source="resources/{fmu}.fmu">\n        <ssd:Connectors>\n{conns}\n'
                     f'        </ssd:Connectors>\n      </ssd:Component>')
    links = "\n".join(f'      <ssd:Connection startElement="{a}" startConnector="{x}" '
                      f'endElement="{b}" endConnector="{y}"/>' for a, x, b, y in CONNECTIONS)
    return SSD.format(components="\n".join(comps), connections=links)


def write_ssp(out: Path, fmu_dir: Path) -> Path:
    """out (an .ssp file) with SystemStructure.ssd and the two FMUs from fmu_dir."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("SystemStructure.ssd", ssd())
        for fmu, _ in COMPONENTS.values():
            z.write(Path(fmu_dir) / f"{fmu}.fmu", f"resources/{fmu}.fmu")
    return Path(out)


def run_ssp(ssp: Path, stop=8.0, h=0.01):
    """The .ssp run by fmpy's SSP master (``simulate_ssp``, a Jacobi master too): a record
    array of time and the connectors (``disk.u1``, ``pi.command``, ...).  Its conventions:
    the connectors start at 0 (not at the outputs' start values), and the row of time t holds
    the values after the step from t."""
    from fmpy.ssp.simulation import simulate_ssp
    return simulate_ssp(str(ssp), stop_time=stop, step_size=h)


def run_fmpy(fmu_dir: Path, stop=8.0, h=0.01):
    """The coupling stepped with fmpy: at each communication point every output is passed to
    the inputs it feeds, then both FMUs step (a Jacobi master, as OMSimulator and ecos)."""
    from fmu_src.host.master import FmuRunner
    fmus = {name: FmuRunner(str(Path(fmu_dir) / f"{fmu}.fmu"), instance=name)
            for name, (fmu, _) in COMPONENTS.items()}
    try:
        rows = []
        for k in range(int(round(stop / h)) + 1):
            values = {(a, x): fmus[a].get(x)[x] for a, x, _, _ in CONNECTIONS}
            rows.append({"time": k * h, **{f"{a}.{x}": v for (a, x), v in values.items()},
                         **{f"disk.{n}": v for n, v in fmus["disk"].outputs().items()}})
            if k * h >= stop - 1e-9:
                break
            for a, x, b, y in CONNECTIONS:
                fmus[b].set(**{y: values[a, x]})
            for f in fmus.values():
                f.fmu.doStep(k * h, h)
        return rows
    finally:
        for f in fmus.values():
            f.close()


if __name__ == "__main__":
    d = Path(sys.argv[1])
    ssp = write_ssp(d / "speed_control.ssp", d)
    print(ssp)
    last = run_ssp(ssp)[-1]
    print(dict(zip(last.dtype.names, last.tolist())))
