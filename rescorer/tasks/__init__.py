"""One module per Hydra task; each exposes ``run(cfg)``."""
