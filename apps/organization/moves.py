"""Moving an inbox file into a folder, journaled (a Move row) so it can be undone: what the owner's decisions
(decisions.py) and a confident suggestion's auto-move (suggesting.py) do to the file."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.organization import fsops, indexing
from apps.organization.digest import sha256_of_handle
from apps.organization.fsops import LibraryPathError, MoveError
from apps.organization.library import OrganizationDecisionError, OrganizationError, require_usable
from apps.organization.models import FileStatus, LibraryFile, Move, Suggestion, SuggestionStatus


def _current_sha256(file: LibraryFile) -> str | None:
    """The file's content hash now, read without following links; None when it is not a usable file there."""
    try:
        with fsops.open_regular(file.library.root_path, file.path) as handle:
            return sha256_of_handle(handle)
    except (OSError, LibraryPathError):
        return None


def _usable(file: LibraryFile) -> None:
    try:
        require_usable(file.library)
    except OrganizationError as exc:
        raise OrganizationDecisionError(str(exc)) from exc


def check_unchanged(suggestion: Suggestion) -> LibraryFile:
    file = suggestion.file
    _usable(file)
    current = _current_sha256(file)
    if current is None or current != suggestion.file_sha256 or file.status != FileStatus.INBOX:
        reason = "the file is gone from the inbox" if current is None else "the file changed after the suggestion"
        Suggestion.objects.filter(pk=suggestion.pk, status=SuggestionStatus.PENDING).update(
            status=SuggestionStatus.EXPIRED, expired_reason=reason, decided_at=timezone.now()
        )
        if current is None and file.status != FileStatus.MISSING:
            file.status = FileStatus.MISSING
            file.save(update_fields=["status"])
        raise OrganizationDecisionError(f"This suggestion expired: {reason}. Scan the inbox for a fresh one.")
    return file


def move_file(*, suggestion: Suggestion, folder: str, reason: str) -> Move:
    file = suggestion.file
    library = file.library
    old_path = file.path
    try:
        folder = fsops.normalize_folder(folder)
        created_folder = fsops.first_missing_folder(library.root_path, folder)
        folder_path = fsops.ensure_folder(library.root_path, folder)
        destination = fsops.move_into(library.root_path, file.path, folder_path)
    except (LibraryPathError, MoveError) as exc:
        raise OrganizationDecisionError(str(exc)) from exc
    new_path = fsops.relative_to_root(library.root_path, destination)
    try:
        with transaction.atomic():
            move = Move.objects.create(
                library=library,
                file=file,
                suggestion=suggestion,
                from_path=file.path,
                to_path=new_path,
                sha256=suggestion.file_sha256,
                reason=reason[:200],
                created_folder=created_folder,
            )
            file.path = new_path
            file.status = FileStatus.FILED
            file.mtime = destination.stat().st_mtime
            file.save(update_fields=["path", "status", "mtime"])
    except Exception:
        fsops.move_back(library.root_path, new_path, old_path)
        raise
    transaction.on_commit(lambda: indexing.index_files([file]))
    return move


def auto_move(*, suggestion: Suggestion) -> Move:
    check_unchanged(Suggestion.objects.select_related("file__library").get(pk=suggestion.pk))
    with transaction.atomic():
        locked = Suggestion.objects.select_for_update().select_related("file__library").get(pk=suggestion.pk)
        if locked.status != SuggestionStatus.PENDING or not locked.target_folder:
            raise OrganizationDecisionError("The suggestion is no longer pending.")
        move = move_file(suggestion=locked, folder=locked.target_folder, reason=f"auto-move ({locked.confidence:.0%})")
        locked.status = SuggestionStatus.ACCEPTED
        locked.action = "auto"
        locked.final_folder = locked.target_folder
        locked.decided_at = move.created_at
        locked.save(update_fields=["status", "action", "final_folder", "decided_at"])
    return move
