"""What a suggestion proposes (a folder, or none, with its confidence and reasoning) and the proposers below
the organize agent: the exact-duplicate rule and the learned classifier."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from apps.organization import learning
from apps.organization.filing_combiner import MIN_CALIBRATION_SAMPLES
from apps.organization.models import FileStatus, Library, LibraryFile, OrganizationSettings, SuggestionSource

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


def folder_allowed(folder: str, settings: OrganizationSettings, exclude: Sequence[str]) -> bool:
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
    if twin is None or not twin.folder or not folder_allowed(twin.folder, settings, exclude):
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
    # Each alternative with what points to it, so that choosing among them when the suggestion abstains is an
    # informed click (the sender filed there, a reply to a mail filed there, the filed file it is most like).
    alternatives = [
        {"folder": f, "confidence": round(c, 4), "evidence": prediction.evidence_by_folder.get(f, [])[:3]}
        for f, c in prediction.ranked[:ALTERNATIVES]
    ]
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
