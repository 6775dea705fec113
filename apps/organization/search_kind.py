"""Library files as search's "file" document kind (registered in OrganizationConfig.ready()): how search
describes a file hit and previews a file, so search needs nothing from this app but this entry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from apps.organization.fsops import LibraryPathError, check_regular_file, resolve_inside
from apps.organization.models import FileStatus, LibraryFile
from apps.organization.roots import library_problem
from apps.search.kinds import DocumentFacts, DocumentKindEntry, DocumentPreview
from apps.search.models import DocumentKind


def describe_files(pks: Iterable[int]) -> dict[int, DocumentFacts]:
    files = LibraryFile.objects.filter(pk__in=list(pks)).only(
        "id", "path", "mime_type", "digest_kind", "metadata", "created_at", "provenance"
    )
    described: dict[int, DocumentFacts] = {}
    for file in files:
        metadata = file.metadata or {}
        described[file.pk] = DocumentFacts(
            title=file.name,
            path=file.path,
            folder=file.folder,
            mime_type=file.mime_type,
            is_image=file.digest_kind == "image",
            sender=str(metadata.get("sender") or (file.provenance or {}).get("sender") or ""),
            date=file.created_at,
        )
    return described


def preview_file(user: Any, file_id: int) -> DocumentPreview | None:
    """One of `user`'s library files (None for another user's or a missing one), with its on-disk path when it
    is an image that is there."""
    file = (
        LibraryFile.objects.select_related("library")
        .filter(pk=file_id, library__owner=user)
        .exclude(status=FileStatus.MISSING)
        .first()
    )
    if file is None:
        return None
    if file.digest_kind != "image":
        return DocumentPreview(path=file.path, image=None)
    if library_problem(file.library):
        return DocumentPreview(path=file.path, image=None)
    try:
        path = resolve_inside(file.library.root_path, file.path)
        check_regular_file(path.lstat(), file.path)  # no link, FIFO or device is read for a thumbnail
    except (LibraryPathError, OSError):
        return DocumentPreview(path=file.path, image=None)
    return DocumentPreview(path=file.path, image=path)


FILE_DOCUMENTS = DocumentKindEntry(
    kind=DocumentKind.FILE.value,
    model=LibraryFile,
    path_column="path",
    describe=describe_files,
    preview=preview_file,
)
