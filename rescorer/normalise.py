"""Text transforms applied before scoring; the written and evaluated text stays the original."""
from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError

CASES = ("keep", "lower", "sentence")


@dataclass(frozen=True)
class Normaliser:
    """``case``: keep | lower | sentence (lower-case, then capitalise the first letter); ``append_period``: add "."."""

    case: str = "keep"
    append_period: bool = False

    def __post_init__(self) -> None:
        if self.case not in CASES:
            raise ConfigError(f"normalise.case must be one of {', '.join(CASES)}, not {self.case!r}")

    def __call__(self, text: str) -> str:
        text = " ".join(text.split())
        if self.case == "lower":
            text = text.lower()
        elif self.case == "sentence":
            text = text.lower()
            text = text[:1].upper() + text[1:]
        if self.append_period and text and text[-1] not in ".!?":
            text += "."
        return text

    @property
    def signature(self) -> str:
        return f"case:{self.case}|period:{'yes' if self.append_period else 'no'}"

    @classmethod
    def from_signature(cls, signature: str) -> "Normaliser":
        """The normaliser whose ``signature`` this is (as a trained model records it)."""
        try:
            fields = dict(part.split(":", 1) for part in signature.split("|"))
            return cls(fields["case"], {"yes": True, "no": False}[fields["period"]])
        except (KeyError, ValueError):
            raise ConfigError(f"not a normalisation signature: {signature!r} (expected 'case:…|period:yes|no')"
                              ) from None
