"""Plain text out of attachment bytes: PDF, DOCX, HTML and text. Pure functions, no I/O, bounded work.

The PDF reader is deliberately small: it finds the indirect objects (also inside compressed object
streams), walks the page tree, decodes content streams (Flate, ASCIIHex, ASCII85) and interprets the text
operators, mapping glyph codes through the font's ToUnicode CMap when there is one and WinAnsi otherwise.
That covers machine-written statements and invoices, which is what mailbox questions are about; scanned
images have no text to find and come back empty.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_INPUT_BYTES = 25 * 1024 * 1024
MAX_TEXT_CHARS = 200_000
MAX_PDF_OBJECTS = 50_000
MAX_STREAM_BYTES = 20 * 1024 * 1024
MAX_PAGES = 200
MAX_XOBJECT_DEPTH = 3

TEXT_TYPES = ("text/plain", "text/csv", "text/calendar", "text/markdown", "message/rfc822")
HTML_TYPES = ("text/html", "application/xhtml+xml")
PDF_TYPES = ("application/pdf", "application/x-pdf")
DOCX_TYPES = ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",)


class ExtractionError(Exception):
    """The file claims a format we read but its content is not readable."""


def attachment_kind(filename: str, mime_type: str) -> str | None:
    """pdf | docx | html | text, or None for formats we do not read (images, archives, …)."""
    name = (filename or "").lower()
    mime = (mime_type or "").lower().split(";")[0].strip()
    if mime in PDF_TYPES or name.endswith(".pdf"):
        return "pdf"
    if mime in DOCX_TYPES or name.endswith(".docx"):
        return "docx"
    if mime in HTML_TYPES or name.endswith((".html", ".htm")):
        return "html"
    if mime in TEXT_TYPES or name.endswith((".txt", ".csv", ".md", ".ics", ".eml")):
        return "text"
    return None


def extract_text(data: bytes, *, filename: str = "", mime_type: str = "") -> str:
    """The text of one attachment ("" for formats we do not read). Raises ExtractionError when broken."""
    kind = attachment_kind(filename, mime_type)
    if kind is None:
        return ""
    data = data[:MAX_INPUT_BYTES]
    if kind == "pdf":
        text = pdf_text(data)
    elif kind == "docx":
        text = docx_text(data)
    elif kind == "html":
        from inscriptis import get_text

        text = get_text(decode_text(data))
    else:
        text = decode_text(data)
    return tidy(text)[:MAX_TEXT_CHARS]


def decode_text(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def tidy(text: str) -> str:
    lines = [_SPACES.sub(" ", line).strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


# --- DOCX -----------------------------------------------------------------------------------------

_DOCX_TOKEN = re.compile(rb"<w:t(?:\s[^>]*)?>(.*?)</w:t>|<w:tab\s*/>|<w:br\s*/>|</w:p>", re.DOTALL)
_XML_ENTITY = re.compile(rb"&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);")
_NAMED_ENTITIES = {b"amp": "&", b"lt": "<", b"gt": ">", b"quot": '"', b"apos": "'"}


def _xml_unescape(raw: bytes) -> str:
    def replace(match: re.Match[bytes]) -> str:
        name = match.group(1)
        if name.startswith(b"#x"):
            return chr(int(name[2:], 16))
        if name.startswith(b"#"):
            return chr(int(name[1:]))
        return _NAMED_ENTITIES[name]

    pieces: list[str] = []
    last = 0
    for match in _XML_ENTITY.finditer(raw):
        pieces.append(raw[last : match.start()].decode("utf-8", errors="replace"))
        pieces.append(replace(match))
        last = match.end()
    pieces.append(raw[last:].decode("utf-8", errors="replace"))
    return "".join(pieces)


def docx_text(data: bytes) -> str:
    """Paragraph text of word/document.xml, read with a tokenizer (no XML parser: no entity expansion)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            info = archive.getinfo("word/document.xml")
            if info.file_size > MAX_STREAM_BYTES:
                raise ExtractionError("word/document.xml is too large")
            xml = archive.read(info)
    except (zipfile.BadZipFile, KeyError) as exc:
        raise ExtractionError(f"not a DOCX file: {exc}") from exc
    out: list[str] = []
    for match in _DOCX_TOKEN.finditer(xml):
        token = match.group(0)
        if match.group(1) is not None:
            out.append(_xml_unescape(match.group(1)))
        elif token.startswith(b"<w:tab"):
            out.append("\t")
        else:
            out.append("\n")
    return "".join(out)


# --- PDF: objects ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ref:
    number: int
    generation: int = 0


class Name(str):
    """A PDF name (/Type); a str subclass so dict keys compare with plain strings."""


@dataclass(slots=True)
class Stream:
    info: dict[str, Any]
    raw: bytes


_WHITESPACE = b" \t\r\n\x0c\x00"
_DELIMITERS = b"()<>[]{}/%"
_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)")
_REF = re.compile(rb"\s*(\d+)\s+(\d+)\s+R(?![A-Za-z])")


class _Lexer:
    """Reads PDF objects (dictionaries, arrays, strings, names, numbers, references) from bytes."""

    def __init__(self, data: bytes, position: int = 0) -> None:
        self.data = data
        self.pos = position

    def skip_space(self) -> None:
        data, size = self.data, len(self.data)
        while self.pos < size:
            char = data[self.pos]
            if char in _WHITESPACE:
                self.pos += 1
            elif char == 0x25:  # % comment to end of line
                end = data.find(b"\n", self.pos)
                self.pos = size if end < 0 else end + 1
            else:
                break

    def read(self, depth: int = 0) -> Any:
        if depth > 64:
            raise ExtractionError("PDF objects nest too deeply")
        self.skip_space()
        data = self.data
        if self.pos >= len(data):
            raise ExtractionError("unexpected end of PDF data")
        char = data[self.pos : self.pos + 1]
        if data.startswith(b"<<", self.pos):
            self.pos += 2
            result: dict[str, Any] = {}
            while True:
                self.skip_space()
                if data.startswith(b">>", self.pos):
                    self.pos += 2
                    return result
                key = self.read(depth + 1)
                value = self.read(depth + 1)
                if isinstance(key, str):
                    result[str(key)] = value
        if char == b"[":
            self.pos += 1
            items: list[Any] = []
            while True:
                self.skip_space()
                if data.startswith(b"]", self.pos):
                    self.pos += 1
                    return items
                items.append(self.read(depth + 1))
        if char == b"(":
            return self._literal_string()
        if char == b"<":
            end = data.find(b">", self.pos)
            if end < 0:
                raise ExtractionError("unterminated hex string")
            digits = re.sub(rb"[^0-9A-Fa-f]", b"", data[self.pos + 1 : end])
            self.pos = end + 1
            if len(digits) % 2:
                digits += b"0"
            return binascii.unhexlify(digits)
        if char == b"/":
            start = self.pos + 1
            end = start
            while end < len(data) and data[end] not in _WHITESPACE and data[end] not in _DELIMITERS:
                end += 1
            self.pos = end
            raw = data[start:end]
            return Name(re.sub(rb"#([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), raw).decode("latin-1"))
        number = _NUMBER.match(data, self.pos)
        if number:
            reference = _REF.match(data, self.pos)
            if reference:
                self.pos = reference.end()
                return Ref(int(reference.group(1)), int(reference.group(2)))
            self.pos = number.end()
            text = number.group(0)
            return float(text) if b"." in text else int(text)
        end = self.pos
        while end < len(data) and data[end] not in _WHITESPACE and data[end] not in _DELIMITERS:
            end += 1
        word = data[self.pos : end]
        self.pos = max(end, self.pos + 1)
        if word == b"true":
            return True
        if word == b"false":
            return False
        if word == b"null":
            return None
        return _Operator(word.decode("latin-1"))

    def _literal_string(self) -> bytes:
        data = self.data
        self.pos += 1
        out = bytearray()
        depth = 1
        while self.pos < len(data):
            char = data[self.pos]
            self.pos += 1
            if char == 0x5C:  # backslash
                if self.pos >= len(data):
                    break
                escaped = data[self.pos]
                self.pos += 1
                if escaped in b"nrtbf":
                    out += {0x6E: b"\n", 0x72: b"\r", 0x74: b"\t", 0x62: b"\b", 0x66: b"\f"}[escaped]
                elif 0x30 <= escaped <= 0x37:
                    digits = bytes([escaped])
                    while len(digits) < 3 and self.pos < len(data) and 0x30 <= data[self.pos] <= 0x37:
                        digits += data[self.pos : self.pos + 1]
                        self.pos += 1
                    out.append(int(digits, 8) & 0xFF)
                elif escaped == 0x0D:
                    if data[self.pos : self.pos + 1] == b"\n":
                        self.pos += 1
                elif escaped != 0x0A:
                    out.append(escaped)
            elif char == 0x28:
                depth += 1
                out.append(char)
            elif char == 0x29:
                depth -= 1
                if depth == 0:
                    return bytes(out)
                out.append(char)
            else:
                out.append(char)
        return bytes(out)


class _Operator(str):
    """A bare keyword: a content-stream operator (Tj, BT) or obj/stream/endobj in the file body."""


_OBJECT_HEADER = re.compile(rb"(?<![0-9])(\d+)\s+(\d+)\s+obj\b")


@dataclass(slots=True)
class _Document:
    objects: dict[int, Any] = field(default_factory=dict)

    def resolve(self, value: Any, depth: int = 0) -> Any:
        while isinstance(value, Ref) and depth < 32:
            value = self.objects.get(value.number)
            depth += 1
        return value


def _read_objects(data: bytes) -> _Document:
    document = _Document()
    for match in _OBJECT_HEADER.finditer(data):
        if len(document.objects) >= MAX_PDF_OBJECTS:
            break
        number = int(match.group(1))
        lexer = _Lexer(data, match.end())
        try:
            value = lexer.read()
        except ExtractionError:
            continue
        lexer.skip_space()
        if isinstance(value, dict) and data.startswith(b"stream", lexer.pos):
            start = lexer.pos + len(b"stream")
            if data.startswith(b"\r\n", start):
                start += 2
            elif data.startswith((b"\n", b"\r"), start):
                start += 1
            length = value.get("Length")
            end = -1
            if isinstance(length, int) and 0 <= length <= MAX_STREAM_BYTES and start + length <= len(data):
                tail = data[start + length : start + length + 32]
                if b"endstream" in tail:
                    end = start + length
            if end < 0:
                end = data.find(b"endstream", start)
                if end < 0:
                    continue
                while end > start and data[end - 1] in b"\r\n":
                    end -= 1
            value = Stream(value, data[start:end])
        # Later definitions (incremental updates) replace earlier ones.
        document.objects[number] = value
    for value in list(document.objects.values()):
        if isinstance(value, Stream) and value.info.get("Type") == "ObjStm":
            _read_object_stream(document, value)
    return document


def _read_object_stream(document: _Document, stream: Stream) -> None:
    try:
        data = decode_stream(document, stream)
    except ExtractionError:
        return
    count = stream.info.get("N")
    first = stream.info.get("First")
    if not isinstance(count, int) or not isinstance(first, int):
        return
    header = _Lexer(data[:first])
    pairs: list[tuple[int, int]] = []
    try:
        for _ in range(min(count, MAX_PDF_OBJECTS)):
            number, offset = header.read(), header.read()
            if isinstance(number, int) and isinstance(offset, int):
                pairs.append((number, offset))
    except ExtractionError:
        pass
    for number, offset in pairs:
        if number in document.objects:
            continue
        try:
            document.objects[number] = _Lexer(data, first + offset).read()
        except ExtractionError:
            continue


def _ascii85(data: bytes) -> bytes:
    body = data.strip()
    if body.startswith(b"<~"):
        body = body[2:]
    end = body.find(b"~>")
    if end >= 0:
        body = body[:end]
    body = re.sub(rb"\s", b"", body)
    return base64.a85decode(body, adobe=False)


def decode_stream(document: _Document, stream: Stream) -> bytes:
    filters = document.resolve(stream.info.get("Filter"))
    chain = filters if isinstance(filters, list) else [filters] if filters else []
    data = stream.raw
    try:
        for name in chain:
            name = document.resolve(name)
            if name in ("FlateDecode", "Fl"):
                decompressor = zlib.decompressobj()
                data = decompressor.decompress(data, MAX_STREAM_BYTES)
            elif name in ("ASCIIHexDecode", "AHx"):
                digits = re.sub(rb"[^0-9A-Fa-f]", b"", data.split(b">")[0])
                data = binascii.unhexlify(digits + (b"0" if len(digits) % 2 else b""))
            elif name in ("ASCII85Decode", "A85"):
                data = _ascii85(data)
            else:
                raise ExtractionError(f"unsupported stream filter {name}")
    except (zlib.error, ValueError, binascii.Error) as exc:
        raise ExtractionError(f"corrupt stream: {exc}") from exc
    return data


# --- PDF: fonts -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Font:
    code_bytes: int = 1
    to_unicode: dict[int, str] = field(default_factory=dict)
    encoding: str = "cp1252"

    def decode(self, raw: bytes) -> str:
        if self.code_bytes == 2:
            codes = [int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw) - 1, 2)]
        else:
            codes = list(raw)
        out: list[str] = []
        for code in codes:
            mapped = self.to_unicode.get(code)
            if mapped is not None:
                out.append(mapped)
            elif self.code_bytes == 1:
                out.append(bytes([code]).decode(self.encoding, errors="replace"))
        return "".join(out)


_BFCHAR = re.compile(rb"beginbfchar(.*?)endbfchar", re.DOTALL)
_BFRANGE = re.compile(rb"beginbfrange(.*?)endbfrange", re.DOTALL)
_HEX = re.compile(rb"<([0-9A-Fa-f\s]*)>")
_RANGE_ROW = re.compile(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(<[0-9A-Fa-f\s]*>|\[[^\]]*\])")


def _utf16(hex_digits: bytes) -> str:
    raw = binascii.unhexlify(re.sub(rb"\s", b"", hex_digits))
    return raw.decode("utf-16-be", errors="replace")


def parse_to_unicode(cmap: bytes) -> dict[int, str]:
    mapping: dict[int, str] = {}
    for block in _BFCHAR.findall(cmap):
        values = _HEX.findall(block)
        for source, target in zip(values[0::2], values[1::2], strict=False):
            mapping[int(source, 16)] = _utf16(target)
    for block in _BFRANGE.findall(cmap):
        for low, high, target in _RANGE_ROW.findall(block):
            start, end = int(low, 16), int(high, 16)
            if end - start > 65_535:
                continue
            if target.startswith(b"["):
                for offset, item in enumerate(_HEX.findall(target)):
                    mapping[start + offset] = _utf16(item)
            else:
                base = _utf16(target[1:-1])
                if not base:
                    continue
                for offset in range(end - start + 1):
                    mapping[start + offset] = base[:-1] + chr(ord(base[-1]) + offset)
    return mapping


def _font(document: _Document, value: Any, cache: dict[int, _Font]) -> _Font:
    key = value.number if isinstance(value, Ref) else id(value)
    if key in cache:
        return cache[key]
    info = document.resolve(value)
    font = _Font()
    if isinstance(info, dict):
        if info.get("Subtype") == "Type0":
            font.code_bytes = 2
        encoding = document.resolve(info.get("Encoding"))
        if encoding == "MacRomanEncoding":
            font.encoding = "mac_roman"
        to_unicode = document.resolve(info.get("ToUnicode"))
        if isinstance(to_unicode, Stream):
            with contextlib.suppress(ExtractionError):
                font.to_unicode = parse_to_unicode(decode_stream(document, to_unicode))
    cache[key] = font
    return font


# --- PDF: pages and content streams ----------------------------------------------------------------


def _pages(document: _Document, root: Any) -> Iterator[dict[str, Any]]:
    """Page dictionaries in reading order, with inherited Resources filled in."""
    stack: list[tuple[Any, Any, int]] = [(root, None, 0)]
    seen: set[int] = set()
    while stack:
        node_ref, inherited, depth = stack.pop()
        if isinstance(node_ref, Ref):
            if node_ref.number in seen:
                continue
            seen.add(node_ref.number)
        node = document.resolve(node_ref)
        if not isinstance(node, dict) or depth > 64:
            continue
        resources = node.get("Resources", inherited)
        kids = document.resolve(node.get("Kids"))
        if isinstance(kids, list):
            for kid in reversed(kids):
                stack.append((kid, resources, depth + 1))
        elif node.get("Type") == "Page" or "Contents" in node:
            yield {**node, "Resources": resources}


def _page_dicts(document: _Document) -> list[dict[str, Any]]:
    catalog = next(
        (v for v in document.objects.values() if isinstance(v, dict) and v.get("Type") == "Catalog"),
        None,
    )
    pages: list[dict[str, Any]] = []
    if catalog is not None:
        pages = list(_pages(document, catalog.get("Pages")))
    if not pages:  # a broken page tree: every page object, in file order
        pages = [v for v in document.objects.values() if isinstance(v, dict) and v.get("Type") == "Page"]
    return pages[:MAX_PAGES]


def _contents(document: _Document, page: dict[str, Any]) -> bytes:
    contents = document.resolve(page.get("Contents"))
    parts = contents if isinstance(contents, list) else [contents]
    data: list[bytes] = []
    for part in parts:
        stream = document.resolve(part)
        if isinstance(stream, Stream):
            try:
                data.append(decode_stream(document, stream))
            except ExtractionError:
                continue
    return b"\n".join(data)


class _TextWriter:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def text(self, value: str) -> None:
        if value:
            self.parts.append(value)

    def newline(self) -> None:
        if self.parts and not self.parts[-1].endswith("\n"):
            self.parts.append("\n")

    def space(self) -> None:
        if self.parts and not self.parts[-1].endswith((" ", "\n")):
            self.parts.append(" ")

    def result(self) -> str:
        return "".join(self.parts)


def _run_content(
    document: _Document,
    content: bytes,
    resources: Any,
    writer: _TextWriter,
    fonts: dict[int, _Font],
    depth: int = 0,
) -> None:
    resources = document.resolve(resources)
    font_table = document.resolve(resources.get("Font")) if isinstance(resources, dict) else None
    xobjects = document.resolve(resources.get("XObject")) if isinstance(resources, dict) else None
    current = _Font()
    operands: list[Any] = []
    lexer = _Lexer(content)
    last_y: float | None = None
    while True:
        lexer.skip_space()
        if lexer.pos >= len(content):
            break
        try:
            token = lexer.read()
        except ExtractionError:
            break
        if not isinstance(token, _Operator):
            operands.append(token)
            if len(operands) > 4096:
                operands.clear()
            continue
        op = str(token)
        if op == "Tf" and len(operands) >= 2 and isinstance(font_table, dict):
            reference = font_table.get(str(operands[-2]))
            current = _font(document, reference, fonts) if reference is not None else _Font()
        elif op == "Tj" and operands and isinstance(operands[-1], bytes):
            writer.text(current.decode(operands[-1]))
        elif op in ("'", '"') and operands and isinstance(operands[-1], bytes):
            writer.newline()
            writer.text(current.decode(operands[-1]))
        elif op == "TJ" and operands and isinstance(operands[-1], list):
            for item in operands[-1]:
                if isinstance(item, bytes):
                    writer.text(current.decode(item))
                elif isinstance(item, int | float) and item < -180:
                    writer.space()  # a wide negative kern is a word gap
        elif op in ("T*", "ET"):
            writer.newline()
        elif op in ("Td", "TD") and len(operands) >= 2:
            dy = operands[-1]
            if isinstance(dy, int | float) and abs(dy) > 0.5:
                writer.newline()
            else:
                writer.space()
        elif op == "Tm" and len(operands) >= 6:
            y = operands[-1]
            if isinstance(y, int | float):
                if last_y is not None and abs(y - last_y) > 0.5:
                    writer.newline()
                else:
                    writer.space()
                last_y = float(y)
        elif op == "Do" and operands and isinstance(xobjects, dict) and depth < MAX_XOBJECT_DEPTH:
            form = document.resolve(xobjects.get(str(operands[-1])))
            if isinstance(form, Stream) and form.info.get("Subtype") == "Form":
                try:
                    inner = decode_stream(document, form)
                except ExtractionError:
                    inner = b""
                _run_content(document, inner, form.info.get("Resources", resources), writer, fonts, depth + 1)
        elif op == "BI":
            # Inline image data is binary: skip to its end marker.
            end = content.find(b"EI", lexer.pos)
            lexer.pos = len(content) if end < 0 else end + 2
        operands.clear()


def pdf_text(data: bytes) -> str:
    if not data.lstrip()[:1024].startswith(b"%PDF") and b"%PDF" not in data[:1024]:
        raise ExtractionError("not a PDF file")
    if b"/Encrypt" in data[-4096:] or re.search(rb"/Encrypt\s+\d+\s+\d+\s+R", data):
        raise ExtractionError("the PDF is encrypted")
    document = _read_objects(data)
    writer = _TextWriter()
    fonts: dict[int, _Font] = {}
    for page in _page_dicts(document):
        _run_content(document, _contents(document, page), page.get("Resources"), writer, fonts)
        writer.newline()
        writer.text("\n")
    return writer.result()
