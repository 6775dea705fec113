"""Suggestions for inbox files: an exact duplicate of a filed file (rule), else the organize agent when
the owner chose an ApiConfig, else the learned classifier. Below the owner's threshold the suggestion
abstains ("no confident folder") and still shows the top alternatives; above the auto-move threshold (when
auto-move is on) the file is moved at once, journaled and undoable like any move."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.organization import learning
from apps.organization.actions import get_settings
from apps.organization.classifier import MIN_CALIBRATION_SAMPLES
from apps.organization.models import (
    ClassifierState,
    FileStatus,
    Library,
    LibraryFile,
    OrganizationSettings,
    Suggestion,
    SuggestionSource,
    SuggestionStatus,
)

logger = logging.getLogger(__name__)
ALTERNATIVES = 3


@dataclass(slots=True)
class Proposal:
    folder: str  # "" = abstain
    confidence: float
    reasoning: str
    alternatives: list[dict[str, Any]] = field(default_factory=list)
    source: str = SuggestionSource.CLASSIFIER
    # Whether `confidence` is a calibrated probability on the owner's own filing (the classifier after
    # MIN_CALIBRATION_SAMPLES filed files, or the exact-duplicate rule): only then may it move a file unasked.
    calibrated: bool = False
    transcript: list[dict[str, Any]] = field(default_factory=list)
    provider_events: list[dict[str, Any]] = field(default_factory=list)


def _allowed(folder: str, settings: OrganizationSettings, exclude: Sequence[str]) -> bool:
    if any(folder == ex or folder.startswith(ex + "/") for ex in [*settings.exclude_folders, *exclude]):
        return False
    targets = settings.target_folders
    return not targets or any(folder == t or folder.startswith(t + "/") for t in targets)


def duplicate_rule(file: LibraryFile, settings: OrganizationSettings, exclude: Sequence[str]) -> Proposal | None:
    twin = (
        LibraryFile.objects.filter(library_id=file.library_id, sha256=file.sha256, status=FileStatus.FILED)
        .exclude(pk=file.pk)
        .order_by("-pk")
        .first()
    )
    if twin is None or not twin.folder or not _allowed(twin.folder, settings, exclude):
        return None
    return Proposal(
        folder=twin.folder,
        confidence=1.0,
        reasoning=f"An identical file (same SHA-256) is already filed as {twin.path}.",
        source=SuggestionSource.RULE,
        calibrated=True,
    )


def classifier_proposal(
    library: Library, file: LibraryFile, settings: OrganizationSettings, exclude: Sequence[str]
) -> Proposal:
    prediction = learning.predict(
        library, file, exclude=[*settings.exclude_folders, *exclude], only=list(settings.target_folders)
    )
    if prediction is None or prediction.top is None:
        return Proposal(
            folder="",
            confidence=0.0,
            reasoning="Nothing to learn from yet: file a few files into a library folder "
            "(or choose folders for inbox files) and suggestions start.",
        )
    alternatives = [{"folder": f, "confidence": round(c, 4)} for f, c in prediction.ranked[:ALTERNATIVES]]
    folder, confidence = prediction.top
    counts = learning.folder_counts(library)
    words = ", ".join(prediction.evidence[:5])
    because = f" Pointing there: {words}." if words else ""
    if prediction.rejected_like:
        lowered = ", ".join(sorted(prediction.rejected_like))
        because += f" Ranked lower because you rejected similar files there: {lowered}."
    if not prediction.has_evidence:
        # Nothing in the file is like anything filed: a confident number here would only echo the folder sizes.
        reasoning = (
            "No confident folder: none of this file's words, senders or threads occur in your filed files, so "
            "there is nothing to compare it with. Choose a folder; the choice is learned."
        )
        return Proposal(folder="", confidence=confidence, reasoning=reasoning, alternatives=alternatives)
    if prediction.calibrated:
        kind = "calibrated confidence"
    else:
        kind = (
            f"confidence calibrated on pooled filing, not yet on yours: fewer than {MIN_CALIBRATION_SAMPLES} "
            "filed files"
        )
    if confidence >= settings.suggest_threshold:
        reasoning = f"Most like the {counts.get(folder, 0)} files in {folder} ({confidence:.0%} {kind}).{because}"
        return Proposal(
            folder=folder,
            confidence=confidence,
            reasoning=reasoning,
            alternatives=alternatives,
            calibrated=prediction.calibrated,
        )
    reasoning = (
        f"No confident folder: the best guess, {folder}, is at {confidence:.0%}, below your "
        f"{settings.suggest_threshold:.0%} threshold. Choose a folder; the choice is learned.{because}"
    )
    return Proposal(folder="", confidence=confidence, reasoning=reasoning, alternatives=alternatives)


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
        from apps.organization.agent import agent_proposal

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
        from apps.organization.decisions import OrganizationDecisionError, auto_move

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
