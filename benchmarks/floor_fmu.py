"""The floor of start-up (benchmarks/bench_startup.py): a trivial pythonfmu FMU, one state
x' = -x stepped by explicit Euler in Python, nothing imported beyond pythonfmu."""

from pythonfmu import Fmi2Causality, Fmi2Slave, Real


class Floor(Fmi2Slave):
    author = "embed project"
    description = "a trivial pythonfmu FMU: the start-up floor"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.x = 1.0
        self.register_variable(Real("x", causality=Fmi2Causality.output))

    def do_step(self, current_time, step_size):
        self.x -= step_size * self.x
        return True
