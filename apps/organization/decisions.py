"""The owner's decisions on suggestions (accept, reject, choose another folder) and undo; the moves they cause,
with their journal, are in moves.py. Every decision marks the classifier for retraining."""

from __future__ import annotations

from pathlib import PurePosixPath

from django.db import transaction
from django.utils import timezone

from apps.organization import fsops, indexing
from apps.organization.digest import sha256_of_handle
from apps.organization.fsops import LibraryPathError, MoveError
from apps.organization.library import (
    OrganizationDecisionError,
    OrganizationError,
    get_settings,
    request_retrain,
    require_usable,
)
from apps.organization.models import INBOX_DIR, FileStatus, Move, Suggestion, SuggestionStatus
from apps.organization.moves import check_unchanged, move_file
from apps.organization.suggesting import suggest_for_file

ACTIONS = ("accept", "reject", "choose")


def respond(*, suggestion: Suggestion, action: str, folder: str = "") -> Suggestion:
    """accept → move to the suggested folder; choose → move to `folder` (created if needed); reject → the
    file stays in the inbox and is not suggested again unless forced."""
    if action not in ACTIONS:
        raise OrganizationDecisionError(f"Unknown action {action!r}: use accept, reject or choose.")
    if action != "reject" and suggestion.status == SuggestionStatus.PENDING:
        # Outside the transaction below, so that the expiry of a stale suggestion is kept when we refuse.
        check_unchanged(Suggestion.objects.select_related("file__library").get(pk=suggestion.pk))
    with transaction.atomic():
        locked = Suggestion.objects.select_for_update().select_related("file__library").get(pk=suggestion.pk)
        if locked.status != SuggestionStatus.PENDING:
            raise OrganizationDecisionError(f"This suggestion is already {locked.status}.")
        if action == "reject":
            locked.status = SuggestionStatus.REJECTED
            locked.action = "reject"
            locked.decided_at = timezone.now()
            locked.save(update_fields=["status", "action", "decided_at"])
        else:
            if action == "accept":
                if not locked.target_folder:
                    raise OrganizationDecisionError("There is no confident folder to accept: choose one instead.")
                target = locked.target_folder
            else:
                if not folder.strip():
                    raise OrganizationDecisionError("Choose needs a folder (targetFolder).")
                target = folder
            move = move_file(suggestion=locked, folder=target, reason=action)
            locked.status = SuggestionStatus.ACCEPTED
            locked.action = action
            locked.final_folder = str(fsops.normalize_folder(target))
            locked.decided_at = move.created_at
            locked.save(update_fields=["status", "action", "final_folder", "decided_at"])
        request_retrain(library=locked.file.library)
    return locked


def undo_move(*, move: Move) -> Move:
    """Move the file back where it was, when it is unchanged and the old path is free; else a clear error
    and nothing changes."""
    with transaction.atomic():
        locked = Move.objects.select_for_update(of=("self",)).select_related("library", "file").get(pk=move.pk)
        if locked.undone_at is not None:
            raise OrganizationDecisionError("This move was already undone.")
        root = locked.library.root_path
        try:
            require_usable(locked.library)
        except OrganizationError as exc:
            raise OrganizationDecisionError(str(exc)) from exc
        try:
            with fsops.open_regular(root, locked.to_path) as handle:
                now = sha256_of_handle(handle)
        except LibraryPathError as exc:
            raise OrganizationDecisionError(str(exc)) from exc
        except OSError as exc:
            raise OrganizationDecisionError(
                f"{locked.to_path} is not there any more, so it cannot be moved back."
            ) from exc
        if now != locked.sha256:
            raise OrganizationDecisionError(
                f"{locked.to_path} changed after the move; undo would move a different file. Move it by hand."
            )
        try:
            fsops.move_back(root, locked.to_path, locked.from_path)
        except (LibraryPathError, MoveError) as exc:
            raise OrganizationDecisionError(str(exc)) from exc
        if locked.created_folder:
            fsops.remove_created_folders(root, str(PurePosixPath(locked.to_path).parent), locked.created_folder)
        locked.undone_at = timezone.now()
        locked.save(update_fields=["undone_at"])
        file = locked.file
        if file is not None:
            file.path = locked.from_path
            file.status = FileStatus.INBOX if locked.from_path.startswith(INBOX_DIR + "/") else FileStatus.FILED
            file.mtime = (root / locked.from_path).stat().st_mtime
            file.save(update_fields=["path", "status", "mtime"])
            transaction.on_commit(lambda: indexing.index_files([file]))
        if locked.suggestion_id:
            # The decision is withdrawn: it no longer teaches the classifier, and the file is back to decide.
            Suggestion.objects.filter(pk=locked.suggestion_id).update(
                status=SuggestionStatus.EXPIRED, expired_reason="the move was undone"
            )
        request_retrain(library=locked.library)
    moved_back = locked.file
    if (
        moved_back is not None
        and moved_back.status == FileStatus.INBOX
        and get_settings(owner=locked.library.owner).auto_suggest
    ):
        # Suggested again for the owner to decide, never auto-moved straight back.
        suggest_for_file(file=moved_back, allow_auto_move=False)
    return locked
