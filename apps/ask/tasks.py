"""django-q2 entry points for Ask."""

from __future__ import annotations


def fail_stalled_ask_runs_task() -> int:
    """Scheduled ("ask: stalled runs"): runs whose web server process stopped are marked failed."""
    from apps.ask.runner import fail_stalled_runs

    return fail_stalled_runs()
