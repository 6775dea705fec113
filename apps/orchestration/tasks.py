"""django-q2 entry points: take ids, re-fetch, tolerate vanished rows, call one action."""

from __future__ import annotations

from apps.orchestration import actions


def run_director_task(run_id: int) -> str:
    run = actions.process_run(run_id=run_id)
    return "taken elsewhere or gone" if run is None else run.status
