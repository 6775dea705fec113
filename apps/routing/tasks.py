"""django-q2 entry points for the fetcher: take ids, re-fetch, call one action."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from apps.orchestration import actions as orchestration_actions
from apps.routing import actions
from apps.routing.models import CycleTrigger


def fetch_cycle_task(cycle_id: int) -> str:
    cycle = actions.execute_fetch_cycle(cycle_id=cycle_id)
    return "gone" if cycle is None else cycle.status


def scheduled_fetch_task(owner_id: int) -> str:
    """One owner's schedule fired: housekeeping, then a cycle over that owner's accounts."""
    actions.fail_stalled_cycles()
    orchestration_actions.requeue_stalled_runs()
    owner = get_user_model().objects.filter(pk=owner_id, is_active=True).first()
    if owner is None:
        return "gone"
    cycle = actions.start_fetch_cycle(owner=owner, trigger=CycleTrigger.SCHEDULE, enqueue=False)
    return fetch_cycle_task(cycle.pk)


def sweep_stalled_task() -> dict[str, int]:
    """Scheduled ("routing: stalled runs and cycles", whether or not any fetcher is on): runs and fetch
    cycles left running by a worker that died are requeued / closed, and runs whose queued task was lost
    are enqueued again, once past the job time limit."""
    return {
        "cycles_failed": actions.fail_stalled_cycles(),
        "runs_requeued": len(orchestration_actions.requeue_stalled_runs()),
        "runs_reenqueued": len(orchestration_actions.reenqueue_queued_runs()),
    }
