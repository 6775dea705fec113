"""Writes for directors and runs (DESIGN.md: typed, keyword-only, side effects on commit)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django_q.tasks import async_task

from apps.orchestration.models import Director, Memory, MemoryScope, Run, RunStatus

logger = logging.getLogger(__name__)


class DirectorNameTaken(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class RunRequest:
    message_id: int
    director_id: int
    filter_id: int | None = None
    match: dict[str, Any] | None = None


def create_director(*, owner: Any, name: str, description: str = "", enabled: bool = True) -> Director:
    try:
        with transaction.atomic():
            return Director.objects.create(
                owner=owner, name=name.strip(), description=description.strip(), enabled=enabled
            )
    except IntegrityError as exc:
        raise DirectorNameTaken(f"You already have a director named {name!r}") from exc


def _runs_of_pairs(pairs: set[tuple[int, int]]) -> list[tuple[int, int, int, str, Any]]:
    """(pk, message id, director id, status, created_at) of the runs for these pairs. Looked up by message
    ids in chunks and matched in Python: an OR per pair would exceed SQL expression limits on big batches."""
    message_ids = sorted({message_id for message_id, _ in pairs})
    director_ids = sorted({director_id for _, director_id in pairs})
    rows: list[tuple[int, int, int, str, Any]] = []
    for start in range(0, len(message_ids), 500):
        rows.extend(
            Run.objects.filter(message_id__in=message_ids[start : start + 500], director_id__in=director_ids)
            .values_list("pk", "message_id", "director_id", "status", "created_at")
            .order_by("pk")
        )
    return [row for row in rows if (row[1], row[2]) in pairs]


def create_runs(*, requests: Sequence[RunRequest], fetch_cycle_id: int | None, trigger: str = "route") -> list[int]:
    """One run per (message, director), whoever calls first; returns the ids of runs this call created.

    The unique constraint makes repeated hooks and racing workers harmless: the losing insert is ignored.
    Every run still queued gets its task enqueued on commit; a duplicate enqueue finds it taken and stops.
    """
    wanted = {(r.message_id, r.director_id): r for r in requests}
    if not wanted:
        return []
    pairs = set(wanted)
    with transaction.atomic():
        existing = {(row[1], row[2]) for row in _runs_of_pairs(pairs)}
        fresh = {pair: request for pair, request in wanted.items() if pair not in existing}
        now = timezone.now()
        Run.objects.bulk_create(
            [
                Run(
                    message_id=r.message_id,
                    director_id=r.director_id,
                    filter_id=r.filter_id,
                    match=r.match or {},
                    fetch_cycle_id=fetch_cycle_id,
                    trigger=trigger,
                    created_at=now,
                )
                for r in fresh.values()
            ],
            ignore_conflicts=True,
            batch_size=500,
        )
        rows = _runs_of_pairs(pairs)
        # Ours are the fresh pairs stamped with our time; a racing worker's insert carries its own.
        created = [
            pk for pk, message_id, director_id, _s, at in rows if (message_id, director_id) in fresh and at == now
        ]
        queued = [pk for pk, _m, _d, status, _at in rows if status == RunStatus.QUEUED]
        transaction.on_commit(lambda: _enqueue_runs(queued))
    return created


def _enqueue_runs(run_ids: list[int]) -> None:
    for run_id in run_ids:
        async_task("apps.orchestration.tasks.run_director_task", run_id, task_name=f"run-{run_id}")


def claim_run(*, run_id: int) -> Run | None:
    """queued → running with one conditional UPDATE: exactly one worker gets the run."""
    taken = Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(
        status=RunStatus.RUNNING, started_at=timezone.now()
    )
    if not taken:
        return None
    return Run.objects.select_related("director", "message").get(pk=run_id)


def finish_run(*, run: Run, status: str, reason: str = "", error: str = "") -> Run:
    run.status = status
    run.status_reason = reason
    run.error = error
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "status_reason", "error", "finished_at"])
    return run


def process_run(*, run_id: int) -> Run | None:
    """Execute one run if it is still queued. Returns the finished run, or None if another worker has it."""
    run = claim_run(run_id=run_id)
    if run is None:
        return None
    if not run.director.enabled:
        return finish_run(run=run, status=RunStatus.SKIPPED, reason="Director is disabled")
    from apps.orchestration.engine import execute_run

    try:
        return execute_run(run)
    except Exception as exc:  # an engine bug must not leave the run "running" forever
        logger.exception("run %s crashed", run_id)
        return finish_run(run=run, status=RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:4000])


class RunNotRetryable(ValueError):
    pass


def retry_run(*, run: Run) -> Run:
    """Put a failed or skipped run back in the queue (a new director thread; the workspace is kept)."""
    if run.status not in (RunStatus.FAILED, RunStatus.SKIPPED):
        raise RunNotRetryable(f"only failed or skipped runs can be retried (this one is {run.status})")
    run.status, run.status_reason, run.error = RunStatus.QUEUED, "", ""
    run.started_at = run.finished_at = None
    run.save(update_fields=["status", "status_reason", "error", "started_at", "finished_at"])
    transaction.on_commit(lambda: _enqueue_runs([run.pk]))
    return run


def update_memory(*, memory: Memory, content: str, tags: list[str], scope: str) -> Memory:
    if scope not in MemoryScope.values:
        raise ValueError(f"unknown scope {scope!r}")
    memory.content, memory.tags, memory.scope = content, tags, scope
    if scope == MemoryScope.GLOBAL:
        memory.director, memory.agent = None, None
    elif scope == MemoryScope.SHARED:
        memory.agent = None
    memory.updated_at = timezone.now()
    memory.save(update_fields=["content", "tags", "scope", "director", "agent", "updated_at"])
    return memory


def delete_memory(*, memory: Memory) -> None:
    memory.delete()


def requeue_stalled_runs(*, older_than_seconds: int | None = None) -> list[int]:
    """Runs left "running" by a worker that died (past the job time limit) go back to the queue; the
    threads of the dead attempt are closed as failed. The workspace is kept, so nothing made is lost."""
    from datetime import timedelta

    from django.conf import settings

    from apps.orchestration.models import Conversation, ThreadStatus

    limit = (
        older_than_seconds if older_than_seconds is not None else int(settings.Q_CLUSTER.get("timeout") or 1800) + 60
    )
    cutoff = timezone.now() - timedelta(seconds=limit)
    stalled = list(Run.objects.filter(status=RunStatus.RUNNING, started_at__lt=cutoff).values_list("pk", flat=True))
    if not stalled:
        return []
    with transaction.atomic():
        Conversation.objects.filter(run_id__in=stalled, status=ThreadStatus.ONGOING).update(
            status=ThreadStatus.FAILED, ended_at=timezone.now()
        )
        requeued = Run.objects.filter(pk__in=stalled, status=RunStatus.RUNNING).update(
            status=RunStatus.QUEUED, status_reason="requeued after the worker stopped", started_at=None
        )
        transaction.on_commit(lambda: _enqueue_runs(stalled))
    logger.warning("requeued %d stalled runs", requeued)
    return stalled


def reenqueue_queued_runs(*, older_than_seconds: int | None = None) -> list[int]:
    """Runs still queued long after they were created: their task was lost with a dead worker (a Redis
    broker keeps no copy of the tasks a cluster had taken) or never reached the broker. Enqueue them again;
    `claim_run` makes a surplus task a no-op, so a run is never executed twice."""
    from datetime import timedelta

    from django.conf import settings

    limit = (
        older_than_seconds if older_than_seconds is not None else int(settings.Q_CLUSTER.get("timeout") or 1800) + 60
    )
    cutoff = timezone.now() - timedelta(seconds=limit)
    waiting = list(
        Run.objects.filter(status=RunStatus.QUEUED, created_at__lte=cutoff).order_by("pk").values_list("pk", flat=True)
    )
    if waiting:
        _enqueue_runs(waiting)
        logger.warning("re-enqueued %d runs still queued after %d s", len(waiting), limit)
    return waiting
