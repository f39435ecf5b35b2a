"""The names of the FMU's own variables, which no scenario variable may take (issue 28).

Every FMU of a scenario has, beside the scenario's parameters, inputs and outputs, the run's
options (``Simulator``'s solver, step, tolerance and embedding path), the formulation and its
options (``embed.modes.formulations.Formulation``), the background workers' pace
(``real_time``, ``worker_deadline``) and the ``status`` output
(fmu_src/runtime/slave.py registers them).  The model checker refuses a scenario variable of
one of these names; tests/test_interface_facts.py holds the slave to this list.
"""

RUN_OPTIONS = ("solver", "h_max", "rtol", "embedding")
STATUS = "status"
FORMULATION_OPTIONS = ("formulation", "configuration_projection", "baumgarte_alpha",
                       "baumgarte_beta", "projection_tol", "projection_iterations",
                       "projection_rcond", "soft_stiffness", "soft_damping")
RELIABILITY_OPTIONS = ("real_time", "worker_deadline")
FMU_VARIABLES = (RUN_OPTIONS + (STATUS,) + FORMULATION_OPTIONS
                 + RELIABILITY_OPTIONS)                 # in the slave's order
# names the build adds to modelDescription.xml beside the slave's own: mode_number, an Integer
# alias of the Enumeration output `mode` for masters that do not read Enumerations (libcosim, ecos)
ALIASES = ("mode_number",)
RESERVED = FMU_VARIABLES + ALIASES                      # no scenario variable may take these
