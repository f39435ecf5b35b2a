"""Seeing a run (issue 26), a host-side tool that no FMU carries: the run recorded (``record``), its
visuals evaluated through the model's kinematics (``kinematics``), drawn as a self-contained
HTML page (``page``, plotly) or a GIF (``gif``, matplotlib + Pillow), and the hybrid automaton
drawn as SVG and Mermaid text (``graph``).  ``commands`` adds ``embed-fmu animate`` and
``embed-fmu graph``."""
