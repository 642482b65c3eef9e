"""The tuned rescorer: what a tuning run chose, as a file (``tuned.yaml``) checked whole before anything uses it,
its models named so that it travels to another machine, and bundled with them into one folder to copy."""
from .file import FILE, Tuned
from .portable import Models

__all__ = ["FILE", "Models", "Tuned"]
