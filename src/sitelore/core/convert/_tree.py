"""Tree helpers the converter's passes share: ancestry, visibility, text sizes, pruning."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable

from selectolax.lexbor import LexborNode

__all__ = [
    "classes",
    "is_hidden",
    "link_text_length",
    "move_children",
    "outermost",
    "remove_outermost",
    "squashed_text",
    "text_length",
    "within",
]

_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)


def within(node: LexborNode, tags: Collection[str], stop: LexborNode | None = None) -> bool:
    """Whether an ancestor of ``node`` (below ``stop``, when given) has one of ``tags``."""
    current = node.parent
    stop_id = stop.mem_id if stop is not None else None
    while current is not None and current.mem_id != stop_id:
        if current.tag in tags:
            return True
        current = current.parent
    return False


def classes(node: LexborNode) -> list[str]:
    """The class names of ``node``."""
    return (node.attributes.get("class") or "").split()


def move_children(source: LexborNode, target: LexborNode) -> LexborNode:
    """Move every child of ``source`` (text included) into ``target``, in order; ``target``."""
    for part in list(source.iter(include_text=True)):
        target.insert_child(part, move=True)
    return target


def squashed_text(node: LexborNode) -> str:
    """The node's text content, whitespace collapsed, nothing added between elements."""
    return " ".join(node.text(deep=True).split())


def is_hidden(node: LexborNode) -> bool:
    """Whether ``node`` itself is hidden by ``hidden``, ``aria-hidden`` or inline style."""
    attrs = node.attributes
    if "hidden" in attrs or (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = attrs.get("style")
    return bool(style and _HIDDEN_STYLE.search(style))


def text_length(node: LexborNode) -> int:
    """Characters of visible-looking text under ``node``, whitespace excluded."""
    return len("".join(node.text(deep=True, separator=" ").split()))


def link_text_length(node: LexborNode) -> int:
    """Characters of text inside the links under ``node``."""
    return sum(text_length(link) for link in node.css("a"))


def _has_marked_ancestor(node: LexborNode, marked: set[int], stop: LexborNode) -> bool:
    current = node.parent
    stop_id = stop.mem_id
    while current is not None and current.mem_id != stop_id:
        if current.mem_id in marked:
            return True
        current = current.parent
    return False


def remove_outermost(
    nodes: Iterable[LexborNode],
    root: LexborNode,
    keep_if: Callable[[LexborNode], bool] | None = None,
) -> None:
    """Decompose ``nodes`` (in document order), skipping those inside another one.

    ``keep_if`` is asked only about nodes not already inside a doomed one.
    """
    for node in outermost(nodes, root, keep_if):
        node.decompose()


def outermost(
    nodes: Iterable[LexborNode],
    root: LexborNode,
    keep_if: Callable[[LexborNode], bool] | None = None,
) -> list[LexborNode]:
    """``nodes`` (in document order, under ``root``) but those inside another one taken.

    Decomposing a node frees its whole subtree, so only these may be decomposed.
    ``keep_if`` leaves a node out (it is asked only about nodes not inside a taken one).
    """
    marked: set[int] = set()
    doomed: list[LexborNode] = []
    root_id = root.mem_id
    for node in nodes:
        if node.mem_id == root_id or node.mem_id in marked:
            continue
        if marked and _has_marked_ancestor(node, marked, root):
            continue
        if keep_if is not None and keep_if(node):
            continue
        marked.add(node.mem_id)
        doomed.append(node)
    return doomed
