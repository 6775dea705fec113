"""Text from outside (API bodies, MCP and director tool arguments) must not carry the NUL character (U+0000).

PostgreSQL cannot store it in a text or JSON column while SQLite can, so without one check at the edges the
same input was stored on one database and refused with a vague error on the other. Every entry point refuses
it the same way, naming where it was found; binary content goes base64-encoded, as the APIs document."""

from __future__ import annotations

from typing import Any

NUL = "\x00"
MAX_REPORTED = 5
NUL_PROBLEM = "text cannot contain the NUL character (U+0000); remove it, or send binary content base64-encoded"


def nul_locations(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Where NUL characters appear in a JSON-like value (strings, and the keys of objects), as paths."""
    found: list[tuple[str | int, ...]] = []
    if isinstance(value, str):
        if NUL in value:
            found.append(path)
    elif isinstance(value, dict):
        for key, item in value.items():
            shown = key.replace(NUL, "\\u0000") if isinstance(key, str) else key
            if shown != key:
                found.append((*path, shown))
            found.extend(nul_locations(item, (*path, shown)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found.extend(nul_locations(item, (*path, index)))
    return found


def nul_message(locations: list[tuple[str | int, ...]]) -> str:
    where = ", ".join(".".join(str(part) for part in loc) or "the input" for loc in locations[:MAX_REPORTED])
    return f"{where}: {NUL_PROBLEM}"
