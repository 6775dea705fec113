"""Reads for routing: the compiled rule set (cached per process), filters, fetch cycles, previews."""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet
from django.http import Http404
from django.utils import timezone
from django_q.models import Schedule

from apps.accounts.models import Message
from apps.orchestration.models import Director, Run
from apps.routing.matching import (
    CompiledFilter,
    InvalidPattern,
    RoutableMessage,
    RoutingOutcome,
    RuleSet,
    compile_pattern,
)
from apps.routing.models import CycleStatus, FetchCycle, Filter

FETCHER_SCHEDULE_NAME = "mailagent-fetcher"
ROUTABLE_FIELDS = (
    "id",
    "account__owner_id",
    "date",
    "stored_at",
    "from_name",
    "from_address",
    "to",
    "cc",
    "bcc",
    "subject",
    "body_text",
    "outbox__route_regardless_of_date",
)

_cache_lock = threading.Lock()
_cached: tuple[tuple[Any, ...], RuleSet] | None = None


def _active_filters() -> QuerySet[Filter]:
    return Filter.objects.filter(enabled=True, director__enabled=True).select_related("director")


def load_rule_set() -> RuleSet:
    """The current rules, recompiled only when a filter or director changed (checked with one query)."""
    global _cached
    signature = tuple(_active_filters().order_by("order", "pk").values_list("pk", "updated_at", "director_id"))
    with _cache_lock:
        if _cached is not None and _cached[0] == signature:
            return _cached[1]
    compiled: list[CompiledFilter] = []
    for item in _active_filters().order_by("order", "pk"):
        try:
            pattern = compile_pattern(item.regex, case_insensitive=item.case_insensitive)
        except InvalidPattern:
            continue  # saved before validation existed or edited in the database: never routes
        compiled.append(
            CompiledFilter(
                id=item.pk,
                director_id=item.director_id,
                director_name=item.director.name,
                owner_id=item.director.owner_id,
                field=item.field,
                regex=item.regex,
                description=item.description,
                created_at=item.created_at,
                pattern=pattern,
            )
        )
    rules = RuleSet(compiled)
    with _cache_lock:
        _cached = (signature, rules)
    return rules


def routable_messages(message_ids: list[int]) -> list[RoutableMessage]:
    rows: list[RoutableMessage] = []
    for start in range(0, len(message_ids), 500):
        chunk = message_ids[start : start + 500]
        rows.extend(
            RoutableMessage.from_row(row)
            for row in Message.objects.filter(pk__in=chunk).order_by("pk").values(*ROUTABLE_FIELDS)
        )
    return rows


def last_message_ids_for_user(*, user: Any, last: int) -> list[int]:
    """The newest `last` stored messages of the user's accounts (by date, then storage order)."""
    return list(
        Message.objects.filter(account__owner=user)
        .order_by("-date", "-pk")
        .values_list("pk", flat=True)[: max(0, last)]
    )


# --- filters and directors ---------------------------------------------------------------------------


def list_directors_for_user(*, user: Any) -> QuerySet[Director]:
    return Director.objects.filter(owner=user).order_by("name")


def access_director(*, user: Any, director_id: int) -> Director:
    director = Director.objects.filter(owner=user, pk=director_id).first()
    if director is None:
        raise Http404("No such director")
    return director


def find_director(*, user: Any, name: str) -> Director | None:
    return Director.objects.filter(owner=user, name=name).first()


def list_filters_for_user(*, user: Any, recent_days: int = 7) -> QuerySet[Filter]:
    """Filters in routing order with `recent_matches`: runs they created in the last `recent_days`."""
    since = timezone.now() - dt.timedelta(days=recent_days)
    recent = dict(
        Run.objects.filter(director__owner=user, created_at__gte=since, filter_id__isnull=False)
        .values_list("filter_id")
        .annotate(n=Count("pk"))
        .values_list("filter_id", "n")
    )
    filters = Filter.objects.filter(director__owner=user).select_related("director").order_by("order", "pk")
    for item in filters:
        item.recent_matches = recent.get(item.pk, 0)  # type: ignore[attr-defined]
    return filters


def access_filter(*, user: Any, filter_id: int) -> Filter:
    item = Filter.objects.filter(director__owner=user, pk=filter_id).select_related("director").first()
    if item is None:
        raise Http404("No such filter")
    return item


# --- fetcher -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FetcherState:
    running: bool
    interval_minutes: int
    next_run: dt.datetime | None
    schedule_id: int | None
    current: FetchCycle | None
    last: FetchCycle | None


def fetcher_schedule_name(*, owner_id: int) -> str:
    return f"{FETCHER_SCHEDULE_NAME}-{owner_id}"


def fetcher_schedule(*, owner: Any) -> Schedule | None:
    """The owner's own fetcher schedule (each owner's fetcher syncs only that owner's accounts)."""
    return Schedule.objects.filter(name=fetcher_schedule_name(owner_id=owner.pk)).first()


def min_interval_minutes() -> int:
    """The shortest fetcher interval anyone may set (each cycle syncs every account of the owner)."""
    return max(1, int(getattr(settings, "MAILAGENT_FETCH_MIN_INTERVAL_MINUTES", 2)))


def default_interval_minutes() -> int:
    return max(min_interval_minutes(), int(getattr(settings, "MAILAGENT_FETCH_INTERVAL_MINUTES", 5)))


def fetcher_state(*, owner: Any) -> FetcherState:
    schedule = fetcher_schedule(owner=owner)
    own = FetchCycle.objects.filter(owner=owner)
    current = own.filter(status=CycleStatus.RUNNING).order_by("-started_at").first()
    last = own.exclude(status=CycleStatus.RUNNING).order_by("-started_at").first()
    return FetcherState(
        running=bool(schedule and schedule.repeats != 0),
        interval_minutes=int(schedule.minutes or default_interval_minutes())
        if schedule
        else default_interval_minutes(),
        next_run=schedule.next_run if schedule and schedule.repeats != 0 else None,
        schedule_id=schedule.pk if schedule else None,
        current=current,
        last=last,
    )


def visible_cycles(*, user: Any) -> QuerySet[FetchCycle]:
    """The user's own fetch cycles; staff see every owner's."""
    cycles = FetchCycle.objects.select_related("owner")
    return cycles if user.is_staff else cycles.filter(owner=user)


def recent_cycles(*, user: Any, limit: int = 20) -> list[FetchCycle]:
    return list(visible_cycles(user=user).order_by("-started_at", "-pk")[:limit])


def access_cycle(*, user: Any, cycle_id: int) -> FetchCycle:
    cycle = visible_cycles(user=user).filter(pk=cycle_id).first()
    if cycle is None:
        raise Http404("No such fetch cycle")
    return cycle


def runs_for_cycle(*, user: Any, cycle_id: int, limit: int = 200) -> QuerySet[Run]:
    return (
        Run.objects.filter(fetch_cycle_id=cycle_id, director__owner=user)
        .select_related("director", "message")
        .order_by("-created_at", "-pk")[:limit]
    )


def recent_runs_for_user(*, user: Any, limit: int = 50) -> QuerySet[Run]:
    return (
        Run.objects.filter(director__owner=user)
        .select_related("director", "message")
        .order_by("-created_at", "-pk")[:limit]
    )


def run_counts_by_status(*, user: Any) -> dict[str, int]:
    return dict(
        Run.objects.filter(director__owner=user)
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )


def queued_run_ids_for_cycle(*, cycle_id: int) -> list[int]:
    return list(
        Run.objects.filter(fetch_cycle_id=cycle_id, status="queued").order_by("pk").values_list("pk", flat=True)
    )


def message_subjects(*, message_ids: list[int]) -> dict[int, str]:
    return dict(Message.objects.filter(pk__in=set(message_ids)).values_list("pk", "subject"))


def evaluate_messages(
    *,
    message_ids: list[int],
    respect_creation: bool = True,
    director_ids: set[int] | None = None,
    rules: RuleSet | None = None,
) -> RoutingOutcome:
    """Run the current filters (or `rules`) over stored messages without writing anything (replay --dry-run,
    the dry-run panels, tests)."""
    rules = load_rule_set() if rules is None else rules
    outcome = RoutingOutcome()
    if not len(rules) or not message_ids:
        return outcome
    for message in routable_messages(message_ids):
        # Mail imported with "route through my filters" is routed whatever its date, on every retry as well.
        result = rules.route(
            message,
            respect_creation=respect_creation and not message.route_regardless_of_date,
            director_ids=director_ids,
        )
        outcome.messages += 1
        outcome.evaluations += result.evaluations
        outcome.errors.extend(result.errors)
        outcome.routes.extend((message.message_id, match) for match in result.matches)
    return outcome


MAX_PREVIEW = 5000


@dataclass(slots=True)
class RoutePreview:
    outcome: RoutingOutcome
    subjects: dict[int, str]
    emails: int  # in the window, checked or not (no enabled filter checks none)


def preview_pattern(
    *, user: Any, last: int, field: str, regex: str, case_insensitive: bool, director: Director | None = None
) -> RoutePreview:
    """Shadow replay of one pattern not saved yet (the add-filter form's "Try this pattern"); raises
    InvalidPattern for a pattern that does not compile."""
    unsaved = CompiledFilter(
        id=0,
        director_id=director.pk if director else 0,
        director_name=director.name if director else "(this pattern)",
        owner_id=user.pk,
        field=field,
        regex=regex,
        description="",
        created_at=timezone.now(),
        pattern=compile_pattern(regex, case_insensitive=case_insensitive),
    )
    ids = last_message_ids_for_user(user=user, last=min(max(last, 0), MAX_PREVIEW))
    outcome = evaluate_messages(message_ids=ids, respect_creation=False, rules=RuleSet([unsaved]))
    subjects = message_subjects(message_ids=[m for m, _ in outcome.routes])
    return RoutePreview(outcome=outcome, subjects=subjects, emails=len(ids))


def preview_routes(*, user: Any, last: int, director_ids: set[int] | None = None) -> RoutePreview:
    """Shadow replay: the newest `last` emails through the current filters, creation dates ignored."""
    ids = last_message_ids_for_user(user=user, last=min(max(last, 0), MAX_PREVIEW))
    outcome = evaluate_messages(message_ids=ids, respect_creation=False, director_ids=director_ids)
    subjects = message_subjects(message_ids=[m for m, _ in outcome.routes])
    return RoutePreview(outcome=outcome, subjects=subjects, emails=len(ids))
