"""Reading docker-compose.yaml the way Compose does, without a Docker engine.

Helpers for tests/deploy: load the file (YAML anchors and ``<<`` merges resolved by PyYAML),
interpolate ``${VAR:-default}`` to the default (what ``docker compose config`` shows with no
.env), split image references, and list a service's bind mounts and environment.
A ``${VAR}`` with no default, or a ``${VAR:?message}``, raises :class:`ComposeFileError` naming
the variable: the file must start with no .env at all.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE_PATH = REPO / "docker-compose.yaml"

_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?])?(?P<arg>[^}]*)\}")


class ComposeFileError(AssertionError):
    """docker-compose.yaml says something these checks cannot accept."""


@dataclass(frozen=True)
class ImageRef:
    """``[registry/]name[:tag][@digest]``."""

    name: str
    tag: str
    digest: str


@dataclass(frozen=True)
class Mount:
    """A bind mount or named volume of a service (short syntax)."""

    source: str
    target: str
    read_only: bool


def load(path: Path = COMPOSE_PATH) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict):
        raise ComposeFileError(f"{path}: no services mapping at the top level")
    return doc


def interpolate(value: str) -> str:
    """Compose's interpolation with an empty environment: defaults win, ``$$`` is ``$``."""

    def sub(m: re.Match[str]) -> str:
        op = m.group("op") or ""
        if op.endswith("-"):
            return m.group("arg")
        raise ComposeFileError(f"${{{m.group('name')}}} has no default: give one "
                               f"(${{{m.group('name')}:-value}}) so the file runs without .env")

    text = _VAR.sub(sub, value.replace("$$", "\x00"))
    if "$" in text:
        raise ComposeFileError(f"{value!r}: a bare $VAR; write ${{VAR:-default}} or $$ for a literal $")
    return text.replace("\x00", "$")


def image_ref(ref: str) -> ImageRef:
    ref = interpolate(ref)
    name, _, digest = ref.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    if tag:
        name = name[: -(len(tag) + 1)]
    return ImageRef(name, tag, digest)


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {k: interpolate(str(v)) for k, v in env.items()}


def mounts(service: dict[str, Any]) -> list[Mount]:
    out = []
    for item in service.get("volumes") or []:
        if not isinstance(item, str):
            raise ComposeFileError(f"volume {item!r}: use the short syntax source:target[:ro]")
        parts = interpolate(item).split(":")
        out.append(Mount(parts[0], parts[1], len(parts) > 2 and parts[2] == "ro"))
    return out


def bind_source(mount: Mount) -> Path | None:
    """The host path of a bind mount (relative to the compose file), None for a named volume."""
    if mount.source.startswith((".", "/")):
        return (COMPOSE_PATH.parent / mount.source).resolve()
    return None


def command_words(service: dict[str, Any], key: str = "command") -> list[str]:
    value = service.get(key)
    if value is None:
        return []
    return list(value) if isinstance(value, list) else shlex.split(value)


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    """Dependency -> condition (the short list form means service_started)."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {d: "service_started" for d in deps}
    return {d: (spec or {}).get("condition", "service_started") for d, spec in deps.items()}


def is_one_shot(service: dict[str, Any]) -> bool:
    return str(service.get("restart", "no")) in ("no", "on-failure")
