"""Host-side tools that never ship in an FMU: the ``embed-fmu`` commands, fmpy runs, studies, the small master, the SSP example, the demo."""
