"""A PI speed controller as a co-simulation slave: the second FMU of the SSP example
(``fmu_src.host.ssp``), which drives disk_ramp's F_ext so that the disk's speed u1 reaches a
set point.

A discrete PI whose output changes only in doStep, so every master sees the same command
whatever order it steps and exchanges in: the step from t to t + h takes e = setpoint -
measurement (the measurement set before it), adds e h to the integral I and sets the command,
held over the next step, to kp e + ki I limited to +-limit.  The command is 0 until the first
step ends.
"""

from __future__ import annotations

from pythonfmu import Fmi2Causality, Fmi2Initial, Fmi2Slave, Fmi2Variability, Real


class PIController(Fmi2Slave):
    author = "embed project"
    description = "PI speed controller for disk_ramp's F_ext (the SSP co-simulation example)"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.setpoint, self.kp, self.ki, self.limit = 2.0, 4.0, 2.0, 20.0
        self.measurement, self.command, self.integral = 0.0, 0.0, 0.0
        for name, desc, unit in [("setpoint", "speed set point for u1", "m/s"),
                                 ("kp", "proportional gain", "N.s/m"),
                                 ("ki", "integral gain", "N/m"),
                                 ("limit", "largest |command|", "N")]:
            self._add(name, desc, unit, Fmi2Causality.parameter, Fmi2Variability.fixed)
        self._add("measurement", "measured speed u1", "m/s", Fmi2Causality.input,
                  Fmi2Variability.continuous, initial=None)
        self._add("command", "force command, to F_ext", "N", Fmi2Causality.output,
                  Fmi2Variability.discrete)

    def _add(self, name, desc, unit, causality, variability, initial=Fmi2Initial.exact):
        var = Real(name, causality=causality, variability=variability, description=desc,
                   **({"initial": initial} if initial else {}))
        xml = var.to_xml
        var.to_xml = lambda: (e := xml(), e.find("Real").set("unit", unit), e)[0]
        self.register_variable(var)

    def do_step(self, current_time, step_size):
        error = self.setpoint - self.measurement
        self.integral += error * step_size
        u = self.kp * error + self.ki * self.integral
        self.command = max(-self.limit, min(self.limit, u))
        return True
