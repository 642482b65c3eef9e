"""YAML that a user's files hold, read strictly: PyYAML's safe loader (no code, no Python objects), refusing what
would let a few lines cost without bound or mean two things — aliases, deep nesting, a lone surrogate, a key given
twice. Config files and tuned rescorers are read through it."""
from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

import yaml

MAX_NESTING = 100  # levels of a document (a tuned file has four)
_SURROGATE = re.compile("[\ud800-\udfff]")


class DuplicateKey(yaml.constructor.ConstructorError):
    """A mapping that names one key twice."""


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases (``*name``: a few lines of nested ones expand to billions of nodes),
    nodes nested deeper than ``MAX_NESTING`` (the composer recurses once a level), text holding a surrogate (a
    ``"\\ud800"`` escape: no Unicode text holds one) and a key given twice in one mapping (which would take the
    last)."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        problem = (f"aliases (*{event.anchor}) are not allowed" if isinstance(event, yaml.AliasEvent) else
                   f"nested too deep (over {MAX_NESTING} levels)" if self.depth >= MAX_NESTING else
                   _surrogate(event.value) if isinstance(event, yaml.ScalarEvent) else None)
        if problem:
            raise yaml.composer.ComposerError(None, None, problem, event.start_mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # the safe loader refuses it itself
            if key in seen:
                raise DuplicateKey(None, None, f"key {key!r} is given twice (each key is given once)",
                                   key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _surrogate(text: str) -> str | None:
    """What is wrong with a text holding a surrogate; None when it holds none."""
    found = _SURROGATE.search(text)
    return found and f"a lone surrogate escape {found[0].encode('unicode_escape').decode()} is not valid Unicode"
