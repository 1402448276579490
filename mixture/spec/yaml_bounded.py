"""YAML parsed with bounds: nesting at most MAX_DEPTH levels, at most MAX_NODES values once aliases are expanded
(a kilobyte "billion laughs" file is refused, not expanded), errors that show a few hundred characters at most."""

from __future__ import annotations

import reprlib
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.nodes import MappingNode, Node, SequenceNode

MAX_DEPTH = 100  # nested mappings and sequences: a spec needs about 6
MAX_NODES = 200_000  # values of the document with every alias expanded

_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist, _SHORT.maxstring, _SHORT.maxother = 3, 6, 6, 120, 120


def short_repr(value: Any, limit: int = 200) -> str:
    """repr(value) cut to `limit` characters without building the whole repr (safe for any size or nesting)."""
    text = _SHORT.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer refuses a document nested deeper than MAX_DEPTH or holding more than MAX_NODES
    values with its aliases expanded, before anything is constructed."""

    _depth = 0
    _aliases = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(None, None, f"nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Node:
        node = super().compose_document()
        if node is not None and expanded_size(node) > MAX_NODES:
            why = (f"more than {MAX_NODES:,} values once its aliases (*name) are expanded; write the values out "
                   "instead of repeating anchors") if self._aliases else \
                f"more than {MAX_NODES:,} values, far more than a spec or a plan holds"
            raise ComposerError(None, None, why, node.start_mark)
        return node


def expanded_size(root: Node) -> int:
    """Values of the tree `root` stands for, aliases expanded (each shared node counted once per use), computed
    on the graph without expanding it; stops counting past MAX_NODES."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if done or not children:
            sizes[id(node)] = min(MAX_NODES + 1, 1 + sum(sizes.get(id(c), 0) for c in children))
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def load_yaml(text: str) -> Any:
    """yaml.safe_load with the bounds above; yaml.YAMLError (a MarkedYAMLError naming the line) past them."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
