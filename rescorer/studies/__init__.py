"""Studies as plain functions, usable without Hydra: PCFG ground truth, minimal pairs, PLL desiderata and
distillation with its held-out comparison. Each module is named after the task that runs it
(``rescorer task=pcfg`` → ``studies/pcfg.py``), whose Hydra adapter in ``tasks/`` only turns the config into
plain arguments."""
