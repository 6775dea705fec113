"""django-q2 entry points for the fetcher: take ids, re-fetch, call one action."""

from __future__ import annotations

from apps.orchestration import actions as orchestration_actions
from apps.routing import actions
from apps.routing.models import CycleTrigger


def fetch_cycle_task(cycle_id: int) -> str:
    cycle = actions.execute_fetch_cycle(cycle_id=cycle_id)
    return "gone" if cycle is None else cycle.status


def scheduled_fetch_task() -> str:
    actions.fail_stalled_cycles()
    orchestration_actions.requeue_stalled_runs()
    cycle = actions.start_fetch_cycle(trigger=CycleTrigger.SCHEDULE, enqueue=False)
    return fetch_cycle_task(cycle.pk)
