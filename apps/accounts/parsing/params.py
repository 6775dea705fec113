"""MIME header parameters (RFC 2045 / RFC 2231 continuations and charsets)."""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from apps.accounts.parsing.charsets import _decode_bytes

_PARAM = re.compile(r';\s*([^\s=;"]+)\s*=\s*("(?:[^"\\]|\\.)*"?|[^;]*)')
_QUOTED_PAIR = re.compile(r"\\(.)")


def _parse_params(value: str) -> tuple[str, dict[str, str]]:
    """(main value lowercased, parameters) with RFC 2231 continuations and charsets resolved."""
    main, semicolon, rest = value.partition(";")
    params: dict[str, str] = {}
    if not semicolon:
        return main.strip().lower(), params
    extended: dict[str, list[tuple[int, bool, str]]] = {}
    for match in _PARAM.finditer(";" + rest):
        key = match.group(1).lower()
        raw = match.group(2).strip()
        if raw.startswith('"'):
            raw = raw[1:-1] if len(raw) > 1 and raw.endswith('"') else raw[1:]
            if "\\" in raw:
                raw = _QUOTED_PAIR.sub(r"\1", raw)
        if "*" in key:
            base, _, section = key.partition("*")
            number = section.rstrip("*")
            encoded = section.endswith("*") or section == ""
            index = int(number) if number.isdigit() and len(number) < 5 else 0
            extended.setdefault(base, []).append((index, encoded, raw))
        elif key not in params:
            params[key] = raw
    for base, sections in extended.items():
        sections.sort(key=lambda item: item[0])
        charset = ""
        buffer = bytearray()
        for position, (_, encoded, text) in enumerate(sections):
            if encoded:
                if position == 0 and text.count("'") >= 2:
                    charset, _, text = text.split("'", 2)
                buffer.extend(unquote_to_bytes(text))
            else:
                buffer.extend(text.encode("utf-8", "surrogateescape"))
        params[base] = _decode_bytes(bytes(buffer), charset)
    return main.strip().lower(), params
