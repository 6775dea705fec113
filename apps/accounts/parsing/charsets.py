"""Bytes to text for mail: charset labels as mailers write them, never raising, always storable."""

from __future__ import annotations

import codecs
import functools

# Labels mailers use that Python does not know, or where the superset is what is really sent.
_CHARSET_ALIASES = {
    "ks_c_5601-1987": "cp949",
    "ks_c_5601": "cp949",
    "euc-kr": "cp949",
    "euc_kr": "cp949",
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "iso-2022-jp": "iso2022_jp_ext",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "big5": "big5hkscs",
    "iso-8859-8-i": "iso-8859-8",
    "iso-8859-6-i": "iso-8859-6",
    "windows-874": "cp874",
    "x-mac-roman": "mac-roman",
    "unicode-1-1-utf-7": "utf-7",
    "x-unicode20utf8": "utf-8",
    "utf8mb4": "utf-8",
}
# Codecs Python knows that are not character sets a mail may legitimately declare.
_REJECTED_CODECS = frozenset(
    {
        "base64",
        "bz2",
        "hex",
        "idna",
        "punycode",
        "quopri",
        "raw-unicode-escape",
        "rot-13",
        "undefined",
        "unicode-escape",
        "uu",
        "zlib",
    }
)


@functools.lru_cache(maxsize=512)
def _codec(charset: str) -> str | None:
    label = charset.strip().strip("\"'").lower()
    if not label or len(label) > 64:
        return None
    label = _CHARSET_ALIASES.get(label, label)
    for candidate in (label, label.removeprefix("x-"), label.replace("windows-", "cp"), label.replace("-", "")):
        try:
            name = codecs.lookup(candidate).name
        except (LookupError, ValueError):
            continue
        return None if name in _REJECTED_CODECS else name
    return None


# Labels that in practice mean "some Western 8-bit text or UTF-8": mail clients mislabel these constantly, and
# valid UTF-8 with non-ASCII bytes is practically never intended as Latin-1.
_WESTERN_CODECS = frozenset({"ascii", "utf-8", "iso8859-1", "latin-1", "cp1252"})
# Charsets whose pure-ASCII bytes are not ASCII text (ISO-2022-JP is 7-bit escape sequences).
_NOT_ASCII_COMPATIBLE = frozenset(
    {
        "iso2022_jp",
        "iso2022_jp_1",
        "iso2022_jp_2",
        "iso2022_jp_2004",
        "iso2022_jp_3",
        "iso2022_jp_ext",
        "iso2022_kr",
        "utf-7",
        "hz",
        "utf-16",
        "utf-16-be",
        "utf-16-le",
        "utf-32",
        "utf-32-be",
        "utf-32-le",
    }
)


def _decode_bytes(data: bytes, charset: str) -> str:
    """Bytes to text, never raising: UTF-8/cp1252/latin-1 for Western labels, else the declared charset."""
    codec = _codec(charset) if charset else None
    if data.isascii() and codec not in _NOT_ASCII_COMPATIBLE:
        return data.decode("ascii")
    if codec is None or codec in _WESTERN_CODECS:
        return _decode_fallback(data)
    try:
        return data.decode(codec)
    except (UnicodeDecodeError, LookupError, ValueError):
        pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode(codec, "replace")  # mostly right beats all wrong for a CJK text with one bad byte
    except (LookupError, ValueError):
        return _decode_fallback(data)


def _decode_fallback(data: bytes) -> str:
    """UTF-8, then cp1252 (what "iso-8859-1" and unlabelled 8-bit text almost always is), then latin-1."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1", "replace")


def _clean(text: str) -> str:
    """No NULs (PostgreSQL rejects them) and no lone surrogates (no database can encode them)."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "replace").decode("utf-8")
    return text
