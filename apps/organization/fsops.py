"""Filesystem operations confined to a library root: folder names are checked (no absolute paths, no '..',
no hidden names, nothing that resolves outside the root through a symlink), moves never overwrite (a
taken name becomes `name (2).ext`) and are one atomic rename (renameat2 RENAME_NOREPLACE on Linux, a hard
link + unlink elsewhere, which cannot overwrite either)."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from apps.organization.models import GUIDELINE_NAME, INBOX_DIR

MAX_COLLISION_SUFFIX = 1000
AT_FDCWD = -100
RENAME_NOREPLACE = 1


class LibraryPathError(ValueError):
    """A path or folder name that is not allowed (outside the root, traversal, symlink escape …)."""


class MoveError(Exception):
    """A move that could not be done; nothing was changed on disk."""


def normalize_folder(folder: str) -> str:
    """'finance/bank/' → 'finance/bank'. Raises LibraryPathError for names that cannot be library folders."""
    text = (folder or "").strip().replace("\\", "/").rstrip("/")
    if not text:
        raise LibraryPathError("Choose a folder: the library root itself is not a folder for files.")
    if "\x00" in text:
        raise LibraryPathError("A folder name cannot contain a NUL character.")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise LibraryPathError("Folders are relative to the library root, not absolute paths.")
    parts = [part.strip() for part in text.split("/")]
    for part in parts:
        if part in ("", ".", ".."):
            raise LibraryPathError(f"{folder!r} is not a folder inside the library (no '.', '..' or empty names).")
        if part.startswith("."):
            raise LibraryPathError(f"{part!r}: hidden folder names are not used by the library.")
        if len(part) > 255:
            raise LibraryPathError("A folder name is longer than 255 characters.")
    if parts[0] == INBOX_DIR:
        raise LibraryPathError("The inbox is where files arrive; choose a folder outside it.")
    return "/".join(parts)


def normalize_relative(path: str) -> str:
    """A file path relative to the root ('inbox/a.pdf'); same rules as folders except the inbox is allowed."""
    text = (path or "").strip().replace("\\", "/").strip("/")
    parts = text.split("/")
    if not text or any(part in ("", ".", "..") for part in parts) or "\x00" in text:
        raise LibraryPathError(f"{path!r} is not a path inside the library.")
    return "/".join(parts)


def resolve_inside(root: Path, relative: str) -> Path:
    """The absolute path of `relative` under `root`, refusing anything whose real path leaves the root."""
    real_root = Path(os.path.realpath(root))
    candidate = real_root / relative
    real = Path(os.path.realpath(candidate))
    if real != real_root and real_root not in real.parents:
        raise LibraryPathError(f"{relative!r} leads outside the library (through a symlink or '..').")
    return candidate


def check_regular_file(info: os.stat_result, shown: str) -> None:
    """Only regular files with a single name are read or moved: a FIFO would block the reader, a device could
    be anything, and a hard link *is* some other file (the server's database, its secret key) under a second
    name that no path check can see."""
    if not stat.S_ISREG(info.st_mode):
        raise LibraryPathError(f"{shown!r} is not a regular file (a folder, FIFO, socket or device); it is left alone.")
    if info.st_nlink > 1:
        raise LibraryPathError(
            f"{shown!r} has {info.st_nlink} hard links, and the other names may be outside the library; "
            "copy the file into the library instead of linking it."
        )


def open_regular(root: Path, relative: str) -> BinaryIO:
    """Open the library file at `relative` for reading, never through a symlink: every component below the root
    is opened relative to its parent with O_NOFOLLOW (so a link swapped in after any earlier check fails
    instead of being followed), and the file must be a regular file with one name (check_regular_file)."""
    relative = normalize_relative(relative)
    parts = relative.split("/")
    directory = os.open(os.path.realpath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=directory)
            os.close(directory)
            directory = child
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise LibraryPathError(f"{relative!r} leads through a symlink; the library does not follow links.") from exc
        raise
    finally:
        os.close(directory)
    try:
        check_regular_file(os.fstat(fd), relative)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def relative_to_root(root: Path, path: Path) -> str:
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if real_root not in real.parents:
        raise LibraryPathError(f"{path} is not inside the library {root}.")
    return real.relative_to(real_root).as_posix()


def ensure_folder(root: Path, folder: str) -> Path:
    """Create `folder` (and parents) under the root, checking every level for symlink escapes."""
    folder = normalize_folder(folder)
    current = Path(os.path.realpath(root))
    for part in PurePosixPath(folder).parts:
        current = current / part
        if current.is_symlink():
            target = Path(os.path.realpath(current))
            real_root = Path(os.path.realpath(root))
            if real_root not in target.parents:
                raise LibraryPathError(f"{folder!r} leads outside the library through a symlink.")
        try:
            current.mkdir(exist_ok=True)
        except FileExistsError as exc:
            raise LibraryPathError(f"{folder!r}: {part!r} exists and is not a folder.") from exc
        except PermissionError as exc:
            raise MoveError(f"No permission to create the folder {folder!r}: {exc.strerror}.") from exc
    return resolve_inside(root, folder)


def first_missing_folder(root: Path, folder: str) -> str:
    """The shallowest level of `folder` that does not exist yet ("" when it all exists): what a move into it
    creates, so that undoing the move can remove exactly the folders it made."""
    folder = normalize_folder(folder)
    parts = PurePosixPath(folder).parts
    for depth in range(1, len(parts) + 1):
        candidate = "/".join(parts[:depth])
        if not (Path(os.path.realpath(root)) / candidate).exists():
            return candidate
    return ""


def remove_created_folders(root: Path, folder: str, created: str) -> list[str]:
    """After an undo: remove `folder` and its parents up to `created` (the folder the move created), each
    only while it is empty. A folder the owner has since put anything into stays."""
    folder, created = normalize_folder(folder), normalize_folder(created)
    if folder != created and not folder.startswith(created + "/"):
        return []
    removed: list[str] = []
    current = PurePosixPath(folder)
    while True:
        try:
            resolve_inside(root, str(current)).rmdir()
        except OSError:  # not empty (or already gone): leave it and everything above it
            break
        removed.append(str(current))
        if str(current) == created:
            break
        current = current.parent
    return removed


def _renameat2_noreplace() -> object | None:
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return None
    libc = ctypes.CDLL(libc_name, use_errno=True)
    function = getattr(libc, "renameat2", None)
    if function is None:
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_RENAMEAT2 = _renameat2_noreplace()


def rename_no_replace(source: Path, destination: Path) -> None:
    """Atomically rename; FileExistsError if the destination exists (it is never overwritten)."""
    if _RENAMEAT2 is not None:
        result = _RENAMEAT2(AT_FDCWD, os.fsencode(source), AT_FDCWD, os.fsencode(destination), RENAME_NOREPLACE)  # type: ignore[operator]
        if result == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(code, os.strerror(code), str(destination))
    # Filesystems without RENAME_NOREPLACE: a hard link fails when the name is taken, so nothing is overwritten.
    os.link(source, destination)
    os.unlink(source)


def free_name(folder: Path, name: str) -> Path:
    """`name` in `folder`, or `stem (2).ext`, `stem (3).ext` … when taken."""
    candidate = folder / name
    if not candidate.exists() and not candidate.is_symlink():
        return candidate
    stem, suffix = Path(name).stem, Path(name).suffix
    for number in range(2, MAX_COLLISION_SUFFIX):
        candidate = folder / f"{stem} ({number}){suffix}"
        if not candidate.exists() and not candidate.is_symlink():
            return candidate
    raise MoveError(f"Too many files named like {name!r} in {folder.name!r}.")


def move_into(root: Path, source_relative: str, folder_path: Path) -> Path:
    """Move the file at `source_relative` into `folder_path` (already checked), never overwriting.
    Returns the destination. Raises MoveError with a clear reason; the file stays where it was."""
    source = resolve_inside(root, normalize_relative(source_relative))
    if source.is_symlink() or not source.is_file():
        raise MoveError(f"{source_relative!r} is not a regular file in the library any more.")
    try:
        check_regular_file(source.lstat(), source_relative)
    except LibraryPathError as exc:
        raise MoveError(str(exc)) from exc
    for _attempt in range(5):
        destination = free_name(folder_path, source.name)
        try:
            rename_no_replace(source, destination)
            return destination
        except FileExistsError:
            continue  # somebody took the name between the check and the rename: pick the next free one
        except PermissionError as exc:
            raise MoveError(f"No permission to move {source_relative!r}: {exc.strerror}.") from exc
        except OSError as exc:
            raise MoveError(f"Could not move {source_relative!r}: {exc.strerror or exc}.") from exc
    raise MoveError(f"Could not find a free name for {source.name!r}.")


def move_back(root: Path, current_relative: str, original_relative: str) -> None:
    """Undo: rename back to exactly the original path; refused if that path is taken."""
    current = resolve_inside(root, normalize_relative(current_relative))
    original = resolve_inside(root, normalize_relative(original_relative))
    try:
        check_regular_file(current.lstat(), current_relative)
    except LibraryPathError as exc:
        raise MoveError(str(exc)) from exc
    except OSError as exc:
        raise MoveError(f"{current_relative!r} is not there any more: {exc.strerror or exc}.") from exc
    original.parent.mkdir(parents=True, exist_ok=True)
    try:
        rename_no_replace(current, original)
    except FileExistsError as exc:
        raise MoveError(f"{original_relative!r} is taken by another file; the move was not undone.") from exc
    except PermissionError as exc:
        raise MoveError(f"No permission to move the file back: {exc.strerror}.") from exc
    except OSError as exc:
        raise MoveError(f"Could not move the file back: {exc.strerror or exc}.") from exc


def folder_tree(root: Path, *, depth: int = 3, exclude: tuple[str, ...] = ()) -> list[str]:
    """Every folder under the root (relative, sorted) down to `depth`, without the inbox, hidden folders
    and symlinks that leave the root."""
    real_root = Path(os.path.realpath(root))
    folders: list[str] = []
    if not real_root.is_dir():
        return folders
    for current, dirnames, _files in os.walk(real_root, followlinks=False):
        relative = Path(current).relative_to(real_root)
        level = len(relative.parts)
        keep: list[str] = []
        for name in sorted(dirnames):
            if name.startswith(".") or (level == 0 and name == INBOX_DIR):
                continue
            rel = (relative / name).as_posix()
            if any(rel == ex or rel.startswith(ex + "/") for ex in exclude):
                continue
            folders.append(rel)
            keep.append(name)
        dirnames[:] = keep if level + 1 < depth else []
    return sorted(folders)


def is_library_file_name(name: str) -> bool:
    """Files the library manages: not hidden, not partial downloads/uploads, not the guideline."""
    lowered = name.lower()
    return not (
        name.startswith(".")
        or name.startswith("~$")
        or lowered.endswith((".part", ".crdownload", ".tmp", ".swp"))
        or name == GUIDELINE_NAME
    )
