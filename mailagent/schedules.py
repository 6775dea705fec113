"""Maintenance schedules every installation needs (the outbox and stalled-run sweepers), created after
`migrate` like the fetcher's schedule is by its action: one django-q2 `Schedule` row per name. Apps
register theirs in AppConfig.ready(); a row an admin edited (interval, or repeats=0 to pause) is kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone


@dataclass(frozen=True, slots=True)
class Maintenance:
    name: str
    func: str
    minutes: int


_registered: dict[str, Maintenance] = {}


def register_maintenance(*, name: str, func: str, minutes: int) -> None:
    _registered[name] = Maintenance(name=name, func=func, minutes=minutes)


def ensure_maintenance_schedules(**kwargs: Any) -> list[str]:
    """post_migrate receiver: create the missing schedule rows; returns the names created."""
    from django_q.models import Schedule

    created: list[str] = []
    for item in _registered.values():
        _, made = Schedule.objects.get_or_create(
            name=item.name,
            defaults={
                "func": item.func,
                "schedule_type": Schedule.MINUTES,
                "minutes": item.minutes,
                "repeats": -1,
                "next_run": timezone.now(),
            },
        )
        if made:
            created.append(item.name)
    return created
