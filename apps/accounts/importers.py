"""Importing local archives: mbox files, Maildir folders, trees of raw RFC 822 files, .eml and .zip.

Everything goes through the same AccountSink as a provider sync, so imports dedupe against what is
stored (Message-ID, or the SHA-256 of the raw bytes when there is none) and can be re-run safely.
"""

from __future__ import annotations

import os
import re
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

from django.conf import settings

from apps.accounts.models import MailAccount
from apps.accounts.parsing import MAX_MESSAGE_BYTES
from apps.accounts.providers.base import FolderInfo, RemoteMessage
from apps.accounts.sync import AccountSink, acquire_sync_lock, release_sync_lock, sync_batch_size

MBOX_MAGIC = b"From "
# Messages per transaction. Bigger transactions are much cheaper per message on SQLite (fewer commits,
# fewer rewrites of the same index pages, bigger FTS segments); the byte cap bounds memory when a batch
# is made of large messages whose attachment payloads are kept until the batch is stored.
IMPORT_BATCH = 2000
IMPORT_BATCH_BYTES = 64 * 1024 * 1024
# Files are sniffed from their first bytes; only single messages are ever read whole (up to the parser's cap).
SNIFF_BYTES = 64 * 1024
# Zip archives are unpacked member by member, streaming; an mbox member goes to a temporary file. The caps
# bound what a small archive can make us unpack (a 917 KB zip can hold a 900 MB member; a 3.4 MB zip of one
# mbox of 20 x 50 MB messages wrote 1 GB): per member, and in total at most DEFAULT_ZIP_RATIO times the
# archive's own size and never more than the absolute cap. Mail compresses 3-10x; more is a bomb.
DEFAULT_ZIP_MEMBER_BYTES = 4 * 1024 * 1024 * 1024
DEFAULT_ZIP_TOTAL_BYTES = 4 * 1024 * 1024 * 1024
DEFAULT_ZIP_RATIO = 20
ZIP_CHUNK_BYTES = 1024 * 1024


class MailImportError(Exception):
    """An import that cannot start or read its source; the message is shown to the user."""


@dataclass(slots=True)
class ImportSummary:
    files: int = 0
    messages: int = 0
    imported: int = 0
    duplicates: int = 0
    parse_errors: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    created_ids: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _Source:
    folder: str
    raw: bytes
    seen: bool = True
    flagged: bool = False


def _flags_from_status(raw: bytes) -> tuple[bool, bool]:
    """mbox Status/X-Status headers: R = read, F = flagged. Archives without them count as read."""
    head = raw[: raw.find(b"\n\n") if b"\n\n" in raw[:65536] else 65536]
    seen, flagged = True, False
    for line in head.splitlines():
        lower = line[:10].lower()
        if lower.startswith(b"status:"):
            seen = b"R" in line[7:]
        elif lower.startswith(b"x-status:"):
            flagged = b"F" in line[9:]
    return seen, flagged


HEADER_LINE = re.compile(rb"^[!-9;-~]{1,76}[ \t]*:")


def looks_like_mail(raw: bytes) -> bool:
    """A message starts with a header field (READMEs, licences and other stray files do not)."""
    first = raw.lstrip(b"\r\n")[:200].split(b"\n", 1)[0]
    return bool(HEADER_LINE.match(first))


def _is_maildir(path: Path) -> bool:
    return (path / "cur").is_dir() and (path / "new").is_dir()


def _read_message_file(path: Path, summary: ImportSummary) -> bytes | None:
    """One message file's bytes; past MAX_MESSAGE_BYTES only the start is read (the parser notes the cut)."""
    try:
        with path.open("rb") as handle:
            # Sized from the file: read(n) allocates n bytes up front, even for a 2 KB message.
            return handle.read(min(os.fstat(handle.fileno()).st_size, MAX_MESSAGE_BYTES) + 1)
    except OSError as exc:
        summary.skipped += 1
        summary.errors.append(f"{path}: {exc.strerror or exc}")
        return None


def _read_head(path: Path, summary: ImportSummary) -> bytes | None:
    try:
        with path.open("rb") as handle:
            return handle.read(SNIFF_BYTES)
    except OSError as exc:
        summary.skipped += 1
        summary.errors.append(f"{path}: {exc.strerror or exc}")
        return None


def _mbox_spans(handle: IO[bytes]) -> Iterator[tuple[int, int]]:
    """(start, stop) byte offsets of each message in an mbox, from a chunked scan for "From " lines.

    The stdlib's mailbox.mbox reads the file line by line to index it, so one 300 MB line (a hostile or
    broken file) costs 300 MB; this holds one chunk at a time. Like mailbox.mbox, every line starting with
    "From " begins a message, and the blank line before it belongs to no message.
    """
    starts: list[int] = []
    offset = 0
    tail = b"\n"  # the file's start counts as a line start
    while chunk := handle.read(ZIP_CHUNK_BYTES):
        window = tail + chunk
        position = window.find(b"\nFrom ")
        while position != -1:
            starts.append(offset - len(tail) + position + 1)
            position = window.find(b"\nFrom ", position + 1)
        offset += len(chunk)
        tail = window[-5:]  # shorter than the needle: a match is never found twice
    for index, begin in enumerate(starts):
        stop = starts[index + 1] if index + 1 < len(starts) else offset
        handle.seek(max(begin, stop - 2))
        if handle.read(2) == b"\n\n":
            stop -= 1
        yield begin, stop


def _iter_mbox(path: Path, folder: str, summary: ImportSummary) -> Iterator[_Source]:
    """Messages of an mbox file, one at a time (the file itself is never read whole)."""
    with path.open("rb") as handle:
        for number, (begin, stop) in enumerate(list(_mbox_spans(handle)), 1):
            handle.seek(begin)
            line = handle.readline(4096)
            while line and not line.endswith(b"\n") and handle.tell() < stop:
                line = handle.readline(ZIP_CHUNK_BYTES)  # an absurd From line: skipped, never held whole
            body_start = handle.tell()
            if body_start >= stop:
                continue
            raw = handle.read(min(stop - body_start, MAX_MESSAGE_BYTES + 1))
            if not raw.strip():
                summary.skipped += 1
                summary.errors.append(f"{path.name} message {number}: empty; skipped")
                continue
            seen, flagged = _flags_from_status(raw)
            yield _Source(folder=folder, raw=raw, seen=seen, flagged=flagged)


def _iter_maildir(path: Path, folder: str, summary: ImportSummary) -> Iterator[_Source]:
    for sub in ("cur", "new"):
        directory = path / sub
        for entry in sorted(os.scandir(directory), key=lambda e: e.name):
            if not entry.is_file() or entry.name.startswith("."):
                continue
            raw = _read_message_file(Path(entry.path), summary)
            if raw is None:
                continue
            summary.files += 1
            info = entry.name.rsplit(":2,", 1)[1] if ":2," in entry.name else ""
            yield _Source(folder=folder, raw=raw, seen="S" in info, flagged="F" in info)


def _iter_file(path: Path, folder: str, summary: ImportSummary) -> Iterator[_Source]:
    if zipfile.is_zipfile(path):
        yield from _iter_zip(path, summary)
        return
    head = _read_head(path, summary)
    if head is None:
        return
    summary.files += 1
    if head.startswith(MBOX_MAGIC):
        yield from _iter_mbox(path, folder, summary)
    elif looks_like_mail(head):
        raw = _read_message_file(path, summary)
        if raw is not None:
            seen, flagged = _flags_from_status(raw)
            yield _Source(folder=folder, raw=raw, seen=seen, flagged=flagged)
    else:
        summary.skipped += 1
        reason = "empty file" if not head.strip() else "not an email (no header on the first line)"
        summary.errors.append(f"{path.name}: {reason}; skipped")


def zip_member_limit() -> int:
    return int(getattr(settings, "MAILAGENT_IMPORT_ZIP_MEMBER_BYTES", DEFAULT_ZIP_MEMBER_BYTES))


def zip_total_limit() -> int:
    return int(getattr(settings, "MAILAGENT_IMPORT_ZIP_TOTAL_BYTES", DEFAULT_ZIP_TOTAL_BYTES))


def zip_ratio_limit() -> int:
    return int(getattr(settings, "MAILAGENT_IMPORT_ZIP_RATIO", DEFAULT_ZIP_RATIO))


class _ZipBudget:
    """Uncompressed bytes read from one archive: per member and in total (zip bombs stop at the cap), the
    total being the smaller of the absolute cap and zip_ratio_limit() times the archive's size."""

    def __init__(self, archive_bytes: int) -> None:
        self.total = 0
        self.exhausted = False
        by_ratio = max(archive_bytes, 1) * zip_ratio_limit()
        self.limit = min(zip_total_limit(), by_ratio)
        self.why = (
            f"{zip_ratio_limit()} times the archive's {archive_bytes} bytes"
            if by_ratio < zip_total_limit()
            else "the most any archive may unpack (MAILAGENT_IMPORT_ZIP_TOTAL_BYTES)"
        )

    def read(self, handle: IO[bytes], size: int) -> bytes:
        data = handle.read(min(size, self.limit - self.total + 1))
        self.total += len(data)
        if self.total > self.limit:
            self.exhausted = True
        return data


def _iter_zip(path: Path, summary: ImportSummary) -> Iterator[_Source]:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise MailImportError(f"{path.name} is not a readable zip file: {exc}") from exc
    budget = _ZipBudget(path.stat().st_size)
    reported = False
    with archive:
        for member in archive.infolist():
            raw_parts = member.filename.replace("\\", "/").split("/")
            name = PurePosixPath(*raw_parts)  # (pathlib drops "." parts, so they are checked on the raw name)
            if any(part in {".", ".."} for part in raw_parts) or (raw_parts[0] == "" and len(raw_parts) > 1):
                summary.skipped += 1
                summary.errors.append(f"{member.filename}: a path outside the archive's own folders; skipped")
                continue
            if member.is_dir() or any(part.startswith(".") or part == "__MACOSX" for part in name.parts):
                continue  # folders, and the hidden files and resource forks archivers add
            if name.parent.name == "tmp":
                continue
            if budget.exhausted:
                summary.skipped += 1
                continue
            if member.file_size > zip_member_limit():
                summary.skipped += 1
                summary.errors.append(
                    f"{member.filename}: {member.file_size} bytes unpacked is more than the "
                    f"{zip_member_limit()} a zip member may be; skipped"
                )
                continue
            try:
                yield from _iter_zip_member(archive, member, budget, summary)
            except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError) as exc:
                summary.skipped += 1
                summary.errors.append(f"{member.filename}: unreadable in the zip ({exc}); skipped")
            if budget.exhausted and not reported:
                reported = True
                summary.errors.append(
                    f"{path.name}: stopped after {budget.limit} unpacked bytes ({budget.why}); the rest of the zip "
                    "was skipped. Unpack it and import the files, or raise the limit"
                )


def _iter_zip_member(
    archive: zipfile.ZipFile, member: zipfile.ZipInfo, budget: _ZipBudget, summary: ImportSummary
) -> Iterator[_Source]:
    """One member, unpacked chunk by chunk to a temporary file (never whole in memory), then read like a file."""
    name = PurePosixPath(member.filename)
    with archive.open(member) as handle, tempfile.NamedTemporaryFile(dir=_scratch_dir()) as spool:
        head = budget.read(handle, SNIFF_BYTES)
        is_mbox = head.startswith(MBOX_MAGIC)
        if not is_mbox and not looks_like_mail(head):
            summary.files += 1
            return
        # A single message needs no more than the parser reads; an mbox is unpacked whole (up to the caps).
        wanted = member.file_size if is_mbox else min(member.file_size, MAX_MESSAGE_BYTES + 1)
        spool.write(head)
        written = len(head)
        while written < wanted and not budget.exhausted:
            chunk = budget.read(handle, min(ZIP_CHUNK_BYTES, wanted - written))
            if not chunk:
                break
            spool.write(chunk)
            written += len(chunk)
        spool.flush()
        summary.files += 1
        path = Path(spool.name)
        if is_mbox:
            yield from _iter_mbox(path, _folder_name(str(name.with_suffix(""))), summary)
            return
        raw = _read_message_file(path, summary)
        if raw is None:
            return
        if name.parent.name in {"cur", "new"}:  # Maildir inside a zip: <folder>/cur/<file>
            info = name.name.rsplit(":2,", 1)[1] if ":2," in name.name else ""
            yield _Source(folder=_folder_name(str(name.parent.parent)), raw=raw, seen="S" in info, flagged="F" in info)
        else:
            seen, flagged = _flags_from_status(raw)
            yield _Source(folder=_folder_name(str(name.parent)), raw=raw, seen=seen, flagged=flagged)


def _scratch_dir() -> str | None:
    uploads = Path(settings.DATA_DIR) / "uploads"
    return str(uploads) if uploads.is_dir() else None


def _folder_name(relative: str) -> str:
    cleaned = relative.strip("/").replace(os.sep, "/")
    return "" if cleaned in {"", "."} else cleaned


def iter_sources(path: Path, summary: ImportSummary) -> Generator[_Source]:
    if not path.exists():
        raise MailImportError(f"{path} does not exist")
    if path.is_file():
        yield from _iter_file(path, _folder_name(path.stem) or "Imported", summary)
        return
    root = path
    for current, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        here = Path(current)
        relative = _folder_name(os.path.relpath(current, root))
        if _is_maildir(here):
            yield from _iter_maildir(here, relative or path.name, summary)
            dirnames[:] = [d for d in dirnames if d not in {"cur", "new", "tmp"}]
        for filename in sorted(filenames):
            if filename.startswith("."):
                continue
            yield from _iter_file(here / filename, relative or path.name, summary)


def contains_mail(path: Path | str) -> tuple[bool, ImportSummary]:
    """Whether the file or tree holds at least one message, reading only up to the first one (a zip of
    pictures is read to its end, within the zip caps); the summary says what was skipped and why."""
    summary = ImportSummary()
    sources = iter_sources(Path(path), summary)
    try:
        for _source in sources:
            return True, summary
    finally:
        sources.close()
    return False, summary


def count_files(path: Path) -> int:
    """A cheap total for progress bars: regular files under path (a zip's members; 1 for another file)."""
    if path.is_file():
        if zipfile.is_zipfile(path):
            try:
                with zipfile.ZipFile(path) as archive:
                    return sum(1 for member in archive.infolist() if not member.is_dir())
            except (zipfile.BadZipFile, OSError):
                return 1
        return 1
    total = 0
    for _current, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        total += sum(1 for name in filenames if not name.startswith("."))
    return total


def import_path(
    account: MailAccount,
    path: Path | str,
    *,
    progress: Callable[[int], object] | None = None,
    batch_size: int = IMPORT_BATCH,
    route_through_filters: bool = False,
) -> ImportSummary:
    """Import an mbox / Maildir / directory tree / .eml / .zip into a local account.

    New mail is indexed and routed like synced mail (the messages-stored hook and its outbox). Routing
    skips mail older than a filter unless `route_through_filters`: then every imported message goes through
    the filters whatever its date, recorded on its outbox row so a crash mid-import loses nothing."""
    source = Path(path)
    token = acquire_sync_lock(account.pk)
    if token is None:
        raise MailImportError(f"{account.name} is being synced or imported right now; try again when it finishes")
    summary = ImportSummary()
    size = max(batch_size, sync_batch_size())
    sink = AccountSink(
        account, lock_token=token, keep_payloads=True, chunk_size=size, route_regardless_of_date=route_through_filters
    )
    batch: list[RemoteMessage] = []
    batch_bytes = 0
    known_folders: set[str] = set()
    files_seen = 0

    def flush() -> None:
        nonlocal files_seen, batch_bytes
        if not batch:
            return
        sink.store_batch(list(batch))
        batch.clear()
        batch_bytes = 0
        if progress is not None:
            progress(summary.files - files_seen)
        files_seen = summary.files

    try:
        for item in iter_sources(source, summary):
            summary.messages += 1
            if item.folder not in known_folders:
                leaf = item.folder.rsplit("/", 1)[-1].lower()
                sink.ensure_folder(
                    FolderInfo(name=item.folder, display_name=item.folder, role="inbox" if leaf == "inbox" else "")
                )
                known_folders.add(item.folder)
            batch.append(
                RemoteMessage(provider_id="", raw=item.raw, folder=item.folder, seen=item.seen, flagged=item.flagged)
            )
            batch_bytes += len(item.raw)
            if len(batch) >= size or batch_bytes >= IMPORT_BATCH_BYTES:
                flush()
        flush()
    finally:
        release_sync_lock(account.pk, token)
    summary.imported = sink.totals.created
    summary.duplicates = sink.totals.duplicates
    summary.parse_errors = sink.totals.parse_errors
    summary.created_ids = sink.totals.created_ids
    return summary
