"""The organization app's library writes: its root, settings and guideline, file intake (scan, watch, upload)
and retraining. The library and settings themselves (created on first use) are in library.py, suggestions in
suggesting.py, the owner's decisions in decisions.py and the moves they cause in moves.py."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.llm.selectors import find_api_config
from apps.organization import fsops, indexing, learning, roots
from apps.organization.digest import digest_file
from apps.organization.fsops import LibraryPathError
from apps.organization.library import (
    OrganizationError,
    ensure_dirs,
    get_library,
    get_settings,
    request_retrain,
    require_usable,
)
from apps.organization.models import (
    GUIDELINE_NAME,
    INBOX_DIR,
    ClassifierState,
    FileSource,
    FileStatus,
    Library,
    LibraryFile,
    OrganizationSettings,
    Suggestion,
    SuggestionStatus,
)
from apps.organization.suggesting import suggest_for_file, suggest_for_inbox

logger = logging.getLogger(__name__)
MAX_UPLOAD_BYTES = 200 * 1024 * 1024
MAX_GUIDELINE_CHARS = 100_000


# ---------------------------------------------------------------------------------------------- library


def set_library_root(*, owner: Any, root: str) -> Library:
    """Move the owner's library to `root`, which must be inside their own base (or, for a superuser, under an
    allowed parent folder): see apps/organization/roots.py."""
    problem = roots.root_problem(owner=owner, root=root)
    if problem:
        raise OrganizationError(problem)
    path = Path(os.path.expanduser(root.strip()))
    try:
        (path / INBOX_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OrganizationError(f"Cannot use {path} as the library: {exc.strerror or exc}.") from exc
    library = get_library(owner=owner)
    if Path(library.root) != path:
        with transaction.atomic():
            # Files of the old root are not under the new one: forget them (the files themselves stay on disk).
            old_ids = list(library.files.values_list("pk", flat=True))
            library.files.all().delete()
            library.root = str(path)
            library.save(update_fields=["root"])
            ClassifierState.objects.filter(library=library).update(stale=True)
        indexing.unindex_files(old_ids)
    return library


def update_settings(*, owner: Any, changes: dict[str, Any]) -> OrganizationSettings:
    """Apply validated changes (keys are model field names; `root` moves the library)."""
    current = get_settings(owner=owner)
    fields: list[str] = []
    for key in ("suggest_threshold", "auto_move_threshold"):
        if key in changes and changes[key] is not None:
            value = float(changes[key])
            if not 0.0 <= value <= 1.0:
                raise OrganizationError(f"{key} must be between 0 and 1.")
            setattr(current, key, value)
            fields.append(key)
    for key in ("auto_suggest", "auto_move"):
        if key in changes and changes[key] is not None:
            setattr(current, key, bool(changes[key]))
            fields.append(key)
    for key in ("target_folders", "exclude_folders"):
        if key in changes and changes[key] is not None:
            try:
                folders = sorted({fsops.normalize_folder(str(f)) for f in changes[key] if str(f).strip()})
            except LibraryPathError as exc:
                raise OrganizationError(f"{key}: {exc}") from exc
            setattr(current, key, folders)
            fields.append(key)
    if "api_config_id" in changes:
        config_id = changes["api_config_id"]
        if config_id in (None, "", 0):
            current.api_config = None
        else:
            config = find_api_config(user=owner, config_id=config_id)
            if config is None:
                raise OrganizationError("That API config does not exist; create one on the Runs settings first.")
            current.api_config = config
        fields.append("api_config")
    if changes.get("root"):
        set_library_root(owner=owner, root=str(changes["root"]))
    if fields:
        current.save(update_fields=[*fields, "updated_at"])
    if {"exclude_folders", "target_folders"} & set(fields):
        request_retrain(library=get_library(owner=owner))
    return current


def write_guideline(*, library: Library, text: str) -> None:
    if len(text) > MAX_GUIDELINE_CHARS:
        raise OrganizationError(f"The guideline is longer than {MAX_GUIDELINE_CHARS:,} characters.")
    require_usable(library)
    target = library.root_path / GUIDELINE_NAME
    try:
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=library.root_path, delete=False) as handle:
            handle.write(text)
        os.replace(handle.name, target)
    except OSError as exc:
        raise OrganizationError(f"Could not save guideline.md: {exc.strerror or exc}.") from exc


# ---------------------------------------------------------------------------------------------- intake


@dataclass(slots=True)
class ScanResult:
    new_files: list[LibraryFile] = field(default_factory=list)
    changed_files: list[LibraryFile] = field(default_factory=list)
    missing: int = 0
    suggestions: list[Suggestion] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def register_file(
    *,
    library: Library,
    path: Path,
    source: str = FileSource.SCAN,
    provenance: dict[str, Any] | None = None,
) -> tuple[LibraryFile | None, str]:
    """Digest and record the file at `path` (inside the library); returns (file, "new" | "changed" | "same").
    A file seen before with the same size and mtime is returned untouched, so the watch and the scan can
    both see a file and it is handled once."""
    relative = fsops.relative_to_root(library.root_path, path)
    if path.is_symlink() or not path.is_file() or not fsops.is_library_file_name(path.name):
        return None, "same"
    status = FileStatus.INBOX if relative.startswith(INBOX_DIR + "/") else FileStatus.FILED
    # Opened once, without following links, and checked to be a regular file with one name; everything below
    # reads this handle, so the file cannot be swapped for a link to something else between check and read.
    with fsops.open_regular(library.root_path, relative) as handle:
        stat = os.fstat(handle.fileno())
        existing = LibraryFile.objects.filter(library=library, path=relative).exclude(status=FileStatus.MISSING).first()
        if existing is not None and existing.size == stat.st_size and existing.mtime == stat.st_mtime:
            return existing, "same"
        digest = digest_file(path, handle=handle)
    values = dict(
        status=status,
        size=digest.size,
        mtime=digest.mtime,
        sha256=digest.sha256,
        mime_type=digest.mime_type[:255],
        digest_kind=digest.kind,
        digest_text=digest.text,
        digest_error=digest.error[:500],
        metadata=digest.metadata,
        digested_at=timezone.now(),
    )
    with transaction.atomic():
        current = (
            LibraryFile.objects.select_for_update()
            .filter(library=library, path=relative)
            .exclude(status=FileStatus.MISSING)
            .first()
        )
        if current is None:
            try:
                with transaction.atomic():
                    current = LibraryFile.objects.create(
                        library=library, path=relative, source=source, provenance=provenance or {}, **values
                    )
            except IntegrityError:  # the other intake path recorded it a moment ago
                raced = LibraryFile.objects.filter(library=library, path=relative).exclude(status="missing").first()
                return raced, "same"
            state = "new"
        else:
            if current.sha256 == digest.sha256 and current.size == digest.size:
                current.mtime = digest.mtime
                current.save(update_fields=["mtime"])
                return current, "same"
            for key, value in values.items():
                setattr(current, key, value)
            current.save(update_fields=[*values])
            _expire_pending(current, reason="the file changed after the suggestion")
            state = "changed"
    indexed = current
    transaction.on_commit(lambda: indexing.index_files([indexed]))
    return current, state


def _expire_pending(file: LibraryFile, *, reason: str) -> int:
    return Suggestion.objects.filter(file=file, status=SuggestionStatus.PENDING).update(
        status=SuggestionStatus.EXPIRED, expired_reason=reason[:200], decided_at=timezone.now()
    )


def mark_missing(*, file: LibraryFile, reason: str = "the file was removed or moved outside the app") -> None:
    with transaction.atomic():
        file.status = FileStatus.MISSING
        file.save(update_fields=["status"])
        _expire_pending(file, reason=reason)
    file_id = file.pk
    transaction.on_commit(lambda: indexing.unindex_files([file_id]))


def _walk_files(root: Path) -> Iterable[Path]:
    real_root = Path(os.path.realpath(root))
    for current, dirnames, filenames in os.walk(real_root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            candidate = Path(current) / name
            if fsops.is_library_file_name(name) and not candidate.is_symlink():
                yield candidate


def scan_library(*, library: Library, force: bool = False, suggest: bool = True) -> ScanResult:
    """Catch up with the disk: new or changed files are digested (inbox and folders), vanished ones are
    marked missing (their pending suggestions expire), and inbox files get suggestions. A library whose root
    is not allowed (roots.library_problem) is not read at all: the result carries the reason."""
    result = ScanResult()
    problem = roots.library_problem(library)
    if problem:
        # What was read from a root that is not allowed (the data directory, another user's library …) leaves
        # search, Ask and MCP: its files are marked missing, as when they vanish; choosing an allowed root
        # reads that folder afresh.
        for stale in LibraryFile.objects.filter(library=library).exclude(status=FileStatus.MISSING):
            mark_missing(file=stale, reason="the library root is not an allowed folder")
            result.missing += 1
        result.errors.append(problem)
        return result
    ensure_dirs(library)
    seen: set[str] = set()
    folders_changed = False
    for path in _walk_files(library.root_path):
        try:
            file, changed = register_file(library=library, path=path, source=FileSource.SCAN)
        except (OSError, LibraryPathError) as exc:
            result.errors.append(f"{path}: {exc}")
            continue
        if file is None:
            continue
        seen.add(file.path)
        if changed != "same":
            (result.new_files if changed == "new" else result.changed_files).append(file)
            folders_changed = folders_changed or file.status == FileStatus.FILED
    for file in LibraryFile.objects.filter(library=library).exclude(status=FileStatus.MISSING):
        if file.path not in seen:
            mark_missing(file=file)
            result.missing += 1
            folders_changed = folders_changed or file.status == FileStatus.FILED
    state = ClassifierState.objects.filter(library=library).first()
    if folders_changed or state is None or state.stale:
        retrain(library=library)
    if suggest:
        result.suggestions = suggest_for_inbox(library=library, force=force)
    return result


def ingest_path(*, library: Library, path: Path, source: str) -> Suggestion | None:
    """One file that just appeared (watch event, upload): digest, then suggest when it is in the inbox."""
    require_usable(library)
    file, changed = register_file(library=library, path=path, source=source)
    if file is None or file.status != FileStatus.INBOX:
        if file is not None and changed != "same":
            request_retrain(library=library)
        return None
    settings = get_settings(owner=library.owner)
    if not settings.auto_suggest:
        return None
    return suggest_for_file(file=file)


def save_upload(
    *, library: Library, name: str, chunks: Iterable[bytes], source: str = FileSource.UPLOAD, provenance: Any = None
) -> LibraryFile:
    """Write an uploaded (or attached) file into the inbox under a free name; never overwrites."""
    clean = Path((name or "").replace("\\", "/")).name.strip()
    if not clean or not fsops.is_library_file_name(clean) or clean in (".", ".."):
        raise OrganizationError(f"{name!r} is not a usable file name.")
    require_usable(library)
    ensure_dirs(library)
    inbox = fsops.resolve_inside(library.root_path, INBOX_DIR)
    written = 0
    try:
        with tempfile.NamedTemporaryFile("wb", dir=inbox, prefix=".upload-", suffix=".part", delete=False) as handle:
            temporary = Path(handle.name)
            for chunk in chunks:
                written += len(chunk)
                if written > MAX_UPLOAD_BYTES:
                    raise OrganizationError(f"{clean} is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB.")
                handle.write(chunk)
        for _attempt in range(5):
            destination = fsops.free_name(inbox, clean)
            try:
                fsops.rename_no_replace(temporary, destination)
                break
            except FileExistsError:
                continue
        else:
            raise OrganizationError(f"Could not find a free name for {clean} in the inbox.")
    except OSError as exc:
        Path(handle.name).unlink(missing_ok=True)
        raise OrganizationError(f"Could not save {clean}: {exc.strerror or exc}.") from exc
    except OrganizationError:
        Path(handle.name).unlink(missing_ok=True)
        raise
    file, _state = register_file(library=library, path=destination, source=source, provenance=provenance)
    if file is None:
        raise OrganizationError(f"{clean} could not be recorded.")
    return file


# ---------------------------------------------------------------------------------------------- learning


def retrain(*, library: Library) -> ClassifierState:
    settings = get_settings(owner=library.owner)
    return learning.train(library, exclude=list(settings.exclude_folders))
