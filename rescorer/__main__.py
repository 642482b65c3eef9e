"""``python -m rescorer``: the ``rescorer`` command."""
from .cli import main

main()
