"""Background entry points (django-q2): they take ids, re-fetch, tolerate vanished rows, call one action."""

from __future__ import annotations

import logging

from apps.organization import actions, intake
from apps.organization.models import ClassifierState, Library

logger = logging.getLogger(__name__)


def retrain_task(library_id: int) -> str:
    library = Library.objects.select_related("owner").filter(pk=library_id).first()
    if library is None:
        return "library gone"
    state = ClassifierState.objects.filter(library=library).first()
    if state is not None and not state.stale:
        return "already up to date"  # several decisions in a row: the first retrain covered them all
    state = actions.retrain(library=library)
    from apps.organization.guideline import propose_from_decisions

    proposals = propose_from_decisions(library=library)
    return (
        f"trained on {state.samples} files in {len(state.folders)} folders in {state.train_seconds:.2f}s; "
        f"{len(proposals)} new guideline proposals"
    )


def scan_libraries_task() -> str:
    """The scheduled fallback: every library is scanned (whatever a watch missed is picked up here), and
    attachments of intake-enabled accounts that were stored but not handled yet are saved."""
    scanned = suggested = 0
    for library in Library.objects.select_related("owner"):
        try:
            result = actions.scan_library(library=library)
        except Exception:
            logger.exception("organization: scanning library %s failed", library.pk)
            continue
        scanned += 1
        suggested += len(result.suggestions)
    saved = intake.sweep_attachments()
    return f"scanned {scanned} libraries, {suggested} pending suggestions, {saved} attachments saved"


def save_attachments_task(account_id: int, message_ids: list[int]) -> str:
    saved = intake.save_message_attachments(account_id=account_id, message_ids=message_ids)
    return f"{saved} attachments saved to the library inbox"
