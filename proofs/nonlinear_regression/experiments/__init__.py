"""The experiments of the nonlinear-regression claims: the simulators (:mod:`.population`,
model A, exact population GD; :mod:`.prompts`, model B, finite prompts — both the paper's
architecture; :mod:`.summary_model`, the blog summary's architecture on finite prompts), what
they are built from (:mod:`.tasks`) and the measurements made with them (:mod:`.runs`,
:mod:`.summary_runs`).  Nothing here imports the theory: every measured number comes from a
simulator run.  (The submodules are not imported here, so that naming one lazily does not load
SciPy.)"""
