"""Harbor's own agent classes, hosted: parity with ``harbor run`` by construction.

Harbor (the Terminal-Bench 2 harness) needs Python >= 3.12; its agents run in a helper
process under a venv of their own (:mod:`.venv`), the host (:mod:`.host`, a script that
imports only Harbor), whose environment is gem-eval's sandbox: its exec, upload and
download come back over a pipe (:mod:`.bridge`) and are answered with gem-eval's
sandbox API (:mod:`.sandbox_calls`). The agents as ``--agent`` names them:
:mod:`.agents`; what they leave (turns, files): :mod:`.atif`.
"""
