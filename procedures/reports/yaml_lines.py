"""Reading a hand-written YAML file so that every problem names its line and the fix.

:class:`LineReader` walks PyYAML's node tree (``yaml.compose``), which keeps each value's line,
and raises the caller's error type (an :class:`~kafka_zk.errors.InvalidInput`) as
``<file>, line N: <what is wrong>; <the fix>``. Used by the maintenance-windows file
(:mod:`procedures.windows.spec`) and the topic spec (:mod:`procedures.plan.topic_spec`).

Failure: the caller's error type, raised by the methods on the first problem.
"""

from __future__ import annotations

import re

import yaml

from kafka_zk.errors import InvalidInput

NAME = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")   # a DAG id, connection id or user name


class LineReader:
    """Walks a YAML node tree, turning every problem into ``error_type`` naming the line and the fix."""

    def __init__(self, path: str, error_type: type[InvalidInput] = InvalidInput) -> None:
        self.path = path
        self.error_type = error_type

    def error(self, node: yaml.Node, problem: str, fix: str) -> InvalidInput:
        return self.error_type(f"{self.path}, line {node.start_mark.line + 1}: {problem}; {fix}")

    def mapping(self, node: yaml.Node, what: str, allowed: set[str] | None,
                required: set[str] = frozenset()) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, f"{what} must be a mapping of 'key: value' lines", "indent its keys under it")
        out: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.error(key_node, f"a key of {what} is not a plain name", "write 'name: value'")
            key = key_node.value
            if key in out:
                raise self.error(key_node, f"{key!r} appears twice in {what}", "keep one of them")
            if allowed is not None and key not in allowed:
                raise self.error(key_node, f"unknown key {key!r} in {what}",
                                 f"use one of {', '.join(sorted(allowed))}")
            out[key] = value_node
        missing = sorted(set(required) - set(out))
        if missing:
            raise self.error(node, f"{what} lacks {', '.join(repr(m) for m in missing)}", "add it")
        return out

    def scalar(self, node: yaml.Node, what: str) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.value == "":
            raise self.error(node, f"{what} must be a single value", "write it on the same line after ':'")
        return node.value

    def names(self, node: yaml.Node, what: str, kind: str = "runbook ids",
              example: str = "write e.g. [decommission_brokers] or ['*'] for all") -> tuple[str, ...]:
        if not isinstance(node, yaml.SequenceNode) or not node.value:
            raise self.error(node, f"{what} must be a non-empty list of {kind}", example)
        out = []
        for item in node.value:
            name = self.scalar(item, f"an entry of {what}")
            if (name != "*" or kind != "runbook ids") and not NAME.match(name):
                raise self.error(item, f"{name!r} in {what} is not a DAG id" if kind == "runbook ids"
                                 else f"{name!r} in {what} is not one of the {kind}", example)
            out.append(name)
        return tuple(out)

    def integer(self, node: yaml.Node, what: str, minimum: int) -> int:
        text = self.scalar(node, what)
        if not re.fullmatch(r"\d+", text) or int(text) < minimum:
            raise self.error(node, f"{what} is {text!r}, not a whole number ≥ {minimum}", "write e.g. 100")
        return int(text)

    def boolean(self, node: yaml.Node, what: str) -> bool:
        text = self.scalar(node, what).lower()
        if text not in ("true", "false"):
            raise self.error(node, f"{what} is {text!r}, not true or false", "write true or false")
        return text == "true"
