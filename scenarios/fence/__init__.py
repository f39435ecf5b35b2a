"""The run-time fence of the disk_fence scenario (gillespie2005 Example 2, Sec 6.2; issue 4): a
fence whose shape the master announces while the simulation runs.

| module | what |
|---|---|
| ``profile`` | a fence as a height profile h(s), parsed through ``embed.expression`` |
| ``checks`` | the checks of a profile from outside, and their time limit |
| ``plane`` | the fence as a plane curve (ramp frame, fence frame, disk centre) |
| ``modes`` | a fence's constraints and mode; the compiled arc and polynomial families |
| ``family`` | the fence of any profile (terms and embedding formed once), installed per profile |
| ``jet_mode`` | one profile's mode on the family's embedding, evaluated with its jet |
| ``announce`` | announcing a fence to a simulator (discrete variables, checks) |
| ``jobs`` | the fast worker's job: check, differentiate, relay the embedding request |
| ``simulator_calls`` | what the fence asks of a simulator, one adapter each |

The scenario itself is ``scenarios/disk_fence.py``; the FMU side (inputs, outputs, state) is
``fmu_src/fence.py``.
"""
