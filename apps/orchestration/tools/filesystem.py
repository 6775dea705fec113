"""filesystem_* tools: strictly inside the owner's virtual root.

- Paths are resolved (symlinks followed) and must stay under the resolved root; `..`, absolute paths
  and links out of the root are refused. The resolved path is then opened one component at a time with
  O_NOFOLLOW below the root, so a symlink swapped in after the check cannot lead out either.
- Regular files with more than one hard link are refused (and invisible to search). A hard link has no
  "target" to check: it *is* the file, and its other names can be anywhere on the same filesystem,
  e.g. the server's own database or secret key, placed inside the root by anyone who can write there.
  Finding the other names would mean scanning the whole filesystem, so the rule is simply "no extra
  links"; copy such a file into the root instead of linking it.
- Over-long paths are a clear tool error, not an uncaught ENAMETOOLONG.
- Search walks at most SEARCH_FILE_LIMIT files, SEARCH_DIRECTORY_LIMIT directories and
  SEARCH_TIME_BUDGET_SECONDS, whichever comes first, and says when it stopped early.
Reads are size-capped and return extracted text (PDF, DOCX, HTML, text)."""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path
from typing import Any

from apps.llm import ToolFailure
from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.schemas import FilesystemRetrieveArgs, FilesystemSearchArgs
from mailagent.textextract import extract_text, looks_binary

SEARCH_FILE_LIMIT = 20_000  # files looked at per search
SEARCH_DIRECTORY_LIMIT = 2_000  # directories walked per search
SEARCH_TIME_BUDGET_SECONDS = 5.0
CONTENT_SCAN_BYTES = 256 * 1024
MAX_PATH_CHARS = 1024  # a relative path the model may send
MAX_NAME_BYTES = 255  # one path component (NAME_MAX on Linux)


def virtual_root(ctx: RunContext) -> Path:
    configured = (ctx.virtual_root or "").strip()
    if not configured:
        raise ToolFailure("no virtual root is configured: filesystem tools are off")
    root = Path(configured).expanduser()
    if not root.is_absolute() or not root.is_dir():
        raise ToolFailure("the configured virtual root is not an existing absolute directory")
    return root.resolve()


def resolve_inside(root: Path, relative: str) -> Path:
    """The real path of `relative` under `root`, or ToolFailure: never a path outside the root."""
    cleaned = relative.replace("\\", "/").strip()
    if "\x00" in cleaned:
        raise ToolFailure("access denied: invalid path")
    if len(cleaned) > MAX_PATH_CHARS:
        raise ToolFailure(f"the path is {len(cleaned)} characters long; paths are at most {MAX_PATH_CHARS}")
    candidate = Path(cleaned)
    if candidate.is_absolute():
        raise ToolFailure("access denied: paths are relative to the virtual root")
    if any(part == ".." for part in candidate.parts):
        raise ToolFailure("access denied: '..' is not allowed")
    if any(len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for part in candidate.parts):
        raise ToolFailure(f"a part of the path is longer than {MAX_NAME_BYTES} bytes; no such file can exist")
    try:
        resolved = (root / candidate).resolve()
    except (OSError, RuntimeError) as exc:  # ENAMETOOLONG after following links, symlink loops
        raise ToolFailure(f"the path cannot be resolved: {_reason(exc)}") from exc
    if not resolved.is_relative_to(root):
        raise ToolFailure("access denied: the path leads outside the virtual root")
    return resolved


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


def _open_inside(root: Path, resolved: Path) -> int:
    """A read-only fd for `resolved` (already checked to be under `root`), never through a symlink.

    Each component below the root is opened relative to its parent with O_NOFOLLOW, so a directory or
    file replaced by a symlink between resolve() and here fails instead of being followed.
    """
    parts = resolved.relative_to(root).parts
    if not parts:
        raise ToolFailure("the virtual root itself is a directory, not a file")
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=directory)
            os.close(directory)
            directory = child
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=directory)
    finally:
        os.close(directory)


def _readable_file(fd: int, shown: str) -> os.stat_result:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise ToolFailure(f"no file {shown!r} under the virtual root")
    if info.st_nlink > 1:
        raise ToolFailure(
            f"access denied: {shown!r} has {info.st_nlink} hard links, and the others may be outside the "
            "virtual root; copy the file into the root instead of linking it"
        )
    return info


def _read_fd(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _is_plain_file(path: Path, root: Path) -> tuple[Path, int] | None:
    """(real path, size) of a search candidate, or None when it is not a readable regular file inside root."""
    try:
        info = path.lstat()
        real = path
        if stat.S_ISLNK(info.st_mode):
            # os.walk does not follow directory links, so only the last component can be a link.
            real = path.resolve()
            if not real.is_relative_to(root):
                return None  # a link out of the root is invisible
            info = real.stat()
    except (OSError, RuntimeError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        return None  # hard-linked files are invisible too (see the module docstring)
    return real, info.st_size


def search(ctx: RunContext, actor: Actor, args: FilesystemSearchArgs) -> dict[str, Any]:
    root = virtual_root(ctx)
    needle = args.query.lower()
    by_name: list[dict[str, Any]] = []
    by_content: list[dict[str, Any]] = []
    files_looked = directories = 0
    stopped = ""
    deadline = time.monotonic() + SEARCH_TIME_BUDGET_SECONDS
    walk = os.walk(root, followlinks=False, onerror=lambda exc: None)
    for directory, subdirs, files in walk:
        directories += 1
        if directories > SEARCH_DIRECTORY_LIMIT:
            stopped = f"stopped after {SEARCH_DIRECTORY_LIMIT} directories"
            break
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for filename in sorted(files):
            files_looked += 1
            if files_looked > SEARCH_FILE_LIMIT:
                stopped = f"stopped after {SEARCH_FILE_LIMIT} files"
                break
            if files_looked % 256 == 0 and time.monotonic() > deadline:
                stopped = f"stopped after {SEARCH_TIME_BUDGET_SECONDS:g} s"
                break
            path = Path(directory) / filename
            found = _is_plain_file(path, root)
            if found is None:
                continue
            real, size = found
            entry = {"filePath": path.relative_to(root).as_posix(), "size": size}
            if needle in filename.lower():
                by_name.append(entry)
            elif len(by_content) < args.limit and size <= CONTENT_SCAN_BYTES:
                head = _scan_head(root, real)
                if head and not looks_binary(head) and needle in head.decode("utf-8", errors="ignore").lower():
                    by_content.append({**entry, "match": "content"})
            if len(by_name) >= args.limit:
                stopped = stopped or "enough matches by name"
                break
        if stopped:
            break  # every limit ends the whole walk, not just this directory
    results = (by_name + by_content)[: args.limit]
    scanned = {"files": min(files_looked, SEARCH_FILE_LIMIT), "directories": min(directories, SEARCH_DIRECTORY_LIMIT)}
    answer: dict[str, Any] = {"files": results, "total": len(results), "scanned": scanned}
    if stopped and stopped != "enough matches by name":
        answer["incomplete"] = f"search {stopped}; narrow the query or search a smaller folder"
    return answer


def _scan_head(root: Path, real: Path) -> bytes:
    try:
        fd = _open_inside(root, real)
    except (OSError, ToolFailure):
        return b""
    try:
        if os.fstat(fd).st_nlink > 1:
            return b""
        return _read_fd(fd, CONTENT_SCAN_BYTES)
    except OSError:
        return b""
    finally:
        os.close(fd)


def retrieve(ctx: RunContext, actor: Actor, args: FilesystemRetrieveArgs) -> dict[str, Any]:
    root = virtual_root(ctx)
    path = resolve_inside(root, args.filePath)
    try:
        fd = _open_inside(root, path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR):
            raise ToolFailure(f"no file {args.filePath!r} under the virtual root") from exc
        if exc.errno == errno.ELOOP:
            raise ToolFailure(
                "access denied: a symbolic link in the path loops, or was put there while the file was opened"
            ) from exc
        raise ToolFailure(f"{args.filePath!r} cannot be read: {_reason(exc)}") from exc
    try:
        info = _readable_file(fd, args.filePath)
        size = info.st_size
        if size > ctx.settings.max_file_bytes:
            raise ToolFailure(f"the file is {size} bytes; the limit is {ctx.settings.max_file_bytes}")
        data = _read_fd(fd, ctx.settings.max_file_bytes)
    except OSError as exc:
        raise ToolFailure(f"{args.filePath!r} cannot be read: {_reason(exc)}") from exc
    finally:
        os.close(fd)
    extracted = extract_text(data, filename=path.name)
    if extracted.error and not extracted.text:
        raise ToolFailure(extracted.error)
    return {
        "filePath": path.relative_to(root).as_posix(),
        "size": size,
        "kind": extracted.kind,
        "truncated": extracted.truncated,
        "text": extracted.text,
    }
