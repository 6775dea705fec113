"""Guideline proposals learned from decisions: when every decision on files from one sender went to one
folder ("Files from billing@qnb.com.tr go to finance/bank: 12 of 12 decisions"), propose that line for
guideline.md. The owner accepts (appended to the file) or discards it; either way it is not proposed again."""

from __future__ import annotations

from collections import defaultdict

from django.utils import timezone

from apps.organization import actions, selectors
from apps.organization.models import GuidelineProposal, Library, Suggestion, SuggestionStatus

MIN_DECISIONS = 3


def _sender(suggestion: Suggestion) -> str:
    file = suggestion.file
    return str((file.metadata or {}).get("sender") or (file.provenance or {}).get("sender") or "").lower()


def propose_from_decisions(*, library: Library) -> list[GuidelineProposal]:
    decided = (
        Suggestion.objects.filter(file__library=library, status=SuggestionStatus.ACCEPTED)
        .exclude(final_folder="")
        .select_related("file")
    )
    by_sender: dict[str, list[str]] = defaultdict(list)
    for suggestion in decided:
        sender = _sender(suggestion)
        if sender:
            by_sender[sender].append(suggestion.final_folder)
    known = set(GuidelineProposal.objects.filter(library=library).values_list("text", flat=True))
    current = selectors.read_guideline(library=library)
    made = []
    for sender, folders in sorted(by_sender.items()):
        if len(folders) < MIN_DECISIONS or len(set(folders)) != 1:
            continue
        folder = folders[0]
        text = f"Files from {sender} go to {folder}: {len(folders)} of {len(folders)} decisions."
        stem = f"Files from {sender} go to {folder}"
        if text in known or stem in current or any(k.startswith(stem) for k in known):
            continue
        made.append(
            GuidelineProposal.objects.create(
                library=library,
                text=text,
                evidence=[{"pattern": f"sender {sender}", "folder": folder, "decisions": len(folders)}],
            )
        )
    return made


def decide_proposal(*, proposal: GuidelineProposal, accept: bool) -> GuidelineProposal:
    if proposal.status != "pending":
        raise actions.OrganizationError(f"This proposal was already {proposal.status}.")
    if accept:
        library = proposal.library
        current = selectors.read_guideline(library=library)
        line = proposal.text.split(":")[0].rstrip(".") + "."
        addition = f"- {line}\n"
        text = current + ("" if not current or current.endswith("\n") else "\n") + addition
        actions.write_guideline(library=library, text=text)
    proposal.status = "accepted" if accept else "discarded"
    proposal.decided_at = timezone.now()
    proposal.save(update_fields=["status", "decided_at"])
    return proposal
