"""Importing local archives: mbox files, Maildir folders, trees of raw RFC 822 files, .eml and .zip.

Everything goes through the same AccountSink as a provider sync, so imports dedupe against what is
stored (Message-ID, or the SHA-256 of the raw bytes when there is none) and can be re-run safely.
"""

from __future__ import annotations

import mailbox
import os
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

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


def _read_file(path: Path, summary: ImportSummary) -> bytes | None:
    try:
        size = path.stat().st_size
        if size > MAX_MESSAGE_BYTES * 20:
            summary.skipped += 1
            summary.errors.append(f"{path.name}: {size} bytes is larger than an mbox import may be")
            return None
        return path.read_bytes()
    except OSError as exc:
        summary.skipped += 1
        summary.errors.append(f"{path}: {exc.strerror or exc}")
        return None


def _iter_mbox_bytes(data: bytes, folder: str, summary: ImportSummary) -> Iterator[_Source]:
    """Split an mbox held in memory (uploads, zip members)."""
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".mbox") as handle:
        handle.write(data)
        handle.flush()
        yield from _iter_mbox(Path(handle.name), folder, summary)


def _iter_mbox(path: Path, folder: str, summary: ImportSummary) -> Iterator[_Source]:
    box = mailbox.mbox(str(path), create=False)
    try:
        for key in box.iterkeys():
            try:
                raw = box.get_bytes(key)
            except Exception as exc:
                summary.skipped += 1
                summary.errors.append(f"{path.name} message {key}: {exc}")
                continue
            seen, flagged = _flags_from_status(raw)
            yield _Source(folder=folder, raw=raw, seen=seen, flagged=flagged)
    finally:
        box.close()


def _iter_maildir(path: Path, folder: str, summary: ImportSummary) -> Iterator[_Source]:
    for sub in ("cur", "new"):
        directory = path / sub
        for entry in sorted(os.scandir(directory), key=lambda e: e.name):
            if not entry.is_file() or entry.name.startswith("."):
                continue
            raw = _read_file(Path(entry.path), summary)
            if raw is None:
                continue
            summary.files += 1
            info = entry.name.rsplit(":2,", 1)[1] if ":2," in entry.name else ""
            yield _Source(folder=folder, raw=raw, seen="S" in info, flagged="F" in info)


def _iter_file(path: Path, folder: str, summary: ImportSummary) -> Iterator[_Source]:
    if zipfile.is_zipfile(path):
        yield from _iter_zip(path, summary)
        return
    raw = _read_file(path, summary)
    if raw is None:
        return
    summary.files += 1
    if raw.startswith(MBOX_MAGIC):
        yield from _iter_mbox(path, folder, summary)
    elif looks_like_mail(raw):
        seen, flagged = _flags_from_status(raw)
        yield _Source(folder=folder, raw=raw, seen=seen, flagged=flagged)
    else:
        summary.skipped += 1
        reason = "empty file" if not raw.strip() else "not an email (no header on the first line)"
        summary.errors.append(f"{path.name}: {reason}; skipped")


def _iter_zip(path: Path, summary: ImportSummary) -> Iterator[_Source]:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise MailImportError(f"{path.name} is not a readable zip file: {exc}") from exc
    with archive:
        for member in archive.infolist():
            name = PurePosixPath(member.filename)
            if member.is_dir() or any(part.startswith(".") or part == "__MACOSX" for part in name.parts):
                continue
            if member.file_size > MAX_MESSAGE_BYTES * 20:
                summary.skipped += 1
                summary.errors.append(f"{member.filename}: too large")
                continue
            data = archive.read(member)
            summary.files += 1
            parent = str(name.parent)
            # Maildir inside a zip: <folder>/cur/<file>
            if name.parent.name in {"cur", "new", "tmp"}:
                if name.parent.name == "tmp":
                    continue
                parent = str(name.parent.parent)
                info = name.name.rsplit(":2,", 1)[1] if ":2," in name.name else ""
                yield _Source(folder=_folder_name(parent), raw=data, seen="S" in info, flagged="F" in info)
            elif data.startswith(MBOX_MAGIC):
                yield from _iter_mbox_bytes(data, _folder_name(str(name.with_suffix(""))), summary)
            elif looks_like_mail(data):
                seen, flagged = _flags_from_status(data)
                yield _Source(folder=_folder_name(parent), raw=data, seen=seen, flagged=flagged)


def _folder_name(relative: str) -> str:
    cleaned = relative.strip("/").replace(os.sep, "/")
    return "" if cleaned in {"", "."} else cleaned


def iter_sources(path: Path, summary: ImportSummary) -> Iterator[_Source]:
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


def count_files(path: Path) -> int:
    """A cheap total for progress bars: regular files under path (1 for a single file)."""
    if path.is_file():
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
) -> ImportSummary:
    """Import an mbox / Maildir / directory tree / .eml / .zip into a local account."""
    source = Path(path)
    token = acquire_sync_lock(account.pk)
    if token is None:
        raise MailImportError(f"{account.name} is being synced or imported right now; try again when it finishes")
    summary = ImportSummary()
    size = max(batch_size, sync_batch_size())
    sink = AccountSink(account, lock_token=token, keep_payloads=True, chunk_size=size)
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
