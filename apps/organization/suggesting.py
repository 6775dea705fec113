"""Suggestions for inbox files: an exact duplicate of a filed file (rule), else the organize agent when
the owner chose an ApiConfig, else the learned classifier. Below the owner's threshold the suggestion
abstains ("no confident folder") and still shows the top alternatives; above the auto-move threshold (when
auto-move is on) the file is moved at once, journaled and undoable like any move."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.organization import learning
from apps.organization.agent import agent_proposal
from apps.organization.library import OrganizationDecisionError, get_settings
from apps.organization.models import (
    ClassifierState,
    FileStatus,
    Library,
    LibraryFile,
    Suggestion,
    SuggestionSource,
    SuggestionStatus,
)
from apps.organization.moves import auto_move
from apps.organization.proposals import Proposal, classifier_proposal, duplicate_rule

logger = logging.getLogger(__name__)


def propose(file: LibraryFile, *, exclude: Sequence[str] = ()) -> Proposal:
    library = file.library
    settings = get_settings(owner=library.owner)
    state = ClassifierState.objects.filter(library=library).first()
    if state is None or state.stale:
        # A decision since the last training: learn it before suggesting, so the next similar file already
        # follows the owner's choice (the background retrain then finds nothing to do).
        learning.train(library, exclude=list(settings.exclude_folders))
    rule = duplicate_rule(file, settings, exclude)
    if rule is not None:
        return rule
    candidate = classifier_proposal(library, file, settings, exclude)
    if settings.api_config_id:
        return agent_proposal(file=file, settings=settings, candidate=candidate, exclude=exclude)
    return candidate


def suggest_for_file(*, file: LibraryFile, force: bool = False, allow_auto_move: bool = True) -> Suggestion | None:
    """A pending suggestion for an inbox file (the existing one unless `force`). None when the owner
    rejected suggestions for this content before and `force` is not set, or the file left the inbox."""
    if file.status != FileStatus.INBOX:
        return None
    pending = Suggestion.objects.filter(file=file, status=SuggestionStatus.PENDING).first()
    if pending is not None and not force:
        return pending
    rejected = list(
        Suggestion.objects.filter(file=file, status=SuggestionStatus.REJECTED, file_sha256=file.sha256)
        .exclude(target_folder="")
        .values_list("target_folder", flat=True)
    )
    if not force and Suggestion.objects.filter(file=file, status=SuggestionStatus.REJECTED).exists():
        return None
    proposal = propose(file, exclude=rejected)
    with transaction.atomic():
        if pending is not None:
            Suggestion.objects.filter(pk=pending.pk, status=SuggestionStatus.PENDING).update(
                status=SuggestionStatus.EXPIRED, expired_reason="suggested again on request", decided_at=timezone.now()
            )
        try:
            with transaction.atomic():
                suggestion = Suggestion.objects.create(
                    file=file,
                    target_folder=proposal.folder,
                    confidence=round(proposal.confidence, 4),
                    reasoning=proposal.reasoning,
                    alternatives=proposal.alternatives,
                    source=proposal.source,
                    file_sha256=file.sha256,
                    transcript=proposal.transcript,
                    provider_events=proposal.provider_events,
                )
        except IntegrityError:  # another process suggested this file meanwhile: one pending per file
            return Suggestion.objects.filter(file=file, status=SuggestionStatus.PENDING).first()
    settings = get_settings(owner=file.library.owner)
    # Only calibrated confidences (the classifier once fitted on enough of the owner's own files, the
    # exact-duplicate rule) move files on their own; an LLM's self-reported confidence, or the classifier's
    # before it is calibrated, is shown but never trusted to move a file unasked.
    confident = (
        bool(suggestion.target_folder)
        and proposal.calibrated
        and suggestion.source != SuggestionSource.LLM
        and suggestion.confidence >= settings.auto_move_threshold
    )
    if allow_auto_move and settings.auto_move and confident:
        try:
            auto_move(suggestion=suggestion)
        except OrganizationDecisionError as exc:
            logger.info("organization: auto-move of %s not done: %s", file.path, exc)
        suggestion.refresh_from_db()
    return suggestion


def suggest_for_inbox(*, library: Library, force: bool = False, paths: Sequence[str] | None = None) -> list[Suggestion]:
    """Suggestions for every inbox file (or the given relative paths) that needs one; returns those made
    or found pending."""
    files = LibraryFile.objects.filter(library=library, status=FileStatus.INBOX).select_related("library__owner")
    if paths is not None:
        files = files.filter(path__in=list(paths))
    made: list[Suggestion] = []
    for file in files.order_by("pk"):
        suggestion = suggest_for_file(file=file, force=force)
        if suggestion is not None:
            made.append(suggestion)
    return made
