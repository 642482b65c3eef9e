"""Packaging; the metadata is in setup.cfg. The configs (``conf/``) and the demo excerpt (``recipes/demo/data``)
stay at the repository top and ship inside the package as ``rescorer/conf`` and ``rescorer/demo``, so an installed
wheel runs ``rescorer task=rescore data=demo`` from any directory, offline (``rescorer/paths.py`` finds them); the
report page's templates ship in ``rescorer/report/templates``."""
from setuptools import find_packages, setup

SHIPPED = {"rescorer.conf": "conf", "rescorer.demo": "recipes/demo/data"}

setup(
    packages=[*find_packages(include=["rescorer", "rescorer.*"]), *SHIPPED],
    package_dir=SHIPPED,
    package_data={"rescorer": ["assets/*/*"], "rescorer.report": ["templates/*"],
                  "rescorer.conf": ["*.yaml", "*/*.yaml"], "rescorer.demo": ["*.md", "*/ref.trn", "*/*best_recog/*"]},
)
