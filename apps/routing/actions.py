"""Every write of routing: filters, routing new mail into runs, replay, the fetcher and its cycles."""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task

from apps.accounts import actions as accounts_actions
from apps.accounts import outbox
from apps.accounts.models import HookKind, MailAccount
from apps.accounts.tasks import sync_all_accounts_task
from apps.orchestration import actions as orchestration_actions
from apps.orchestration.models import Director
from apps.routing import selectors
from apps.routing.matching import FilterError, InvalidPattern, RoutingOutcome, compile_pattern
from apps.routing.models import (
    CycleStatus,
    CycleTrigger,
    FetchCycle,
    FetchCycleMessage,
    Filter,
    FilterField,
    RuleAction,
)

logger = logging.getLogger(__name__)


# --- filters -----------------------------------------------------------------------------------------


def _validated_rule(*, mail_action: str, folder: str, tag: str = "") -> str:
    """Checks the rule; returns the tag's cleaned name ("" unless the rule adds a tag)."""
    if mail_action not in RuleAction.values:
        raise ValidationError({"mail_action": f"Unknown action {mail_action!r}; one of {', '.join(RuleAction.values)}"})
    if mail_action == RuleAction.MOVE and not folder.strip():
        raise ValidationError({"mail_action_folder": "Name the folder to move the mail to."})
    if len(folder) > 512:
        raise ValidationError({"mail_action_folder": "The folder name is longer than 512 characters."})
    if mail_action != RuleAction.TAG:
        return ""
    if not tag.strip():
        raise ValidationError({"mail_action_tag": "Name the tag to add, e.g. receipts."})
    try:
        return accounts_actions.clean_tag_name(tag)
    except accounts_actions.InvalidTag as exc:
        raise ValidationError({"mail_action_tag": str(exc)}) from None


def _validated(*, field_name: str, regex_text: str, case_insensitive: bool, description: str = "") -> None:
    max_regex = Filter._meta.get_field("regex").max_length or 1000
    if len(regex_text) > max_regex:
        raise ValidationError({"regex": f"Invalid regex pattern: longer than {max_regex} characters"})
    if len(description) > 300:
        raise ValidationError({"description": "The description is longer than 300 characters"})
    if field_name not in FilterField.values:
        raise ValidationError({"field": f"Unknown field {field_name!r}; one of {', '.join(FilterField.labels)}"})
    try:
        compile_pattern(regex_text, case_insensitive=case_insensitive)
    except InvalidPattern as exc:
        raise ValidationError({"regex": str(exc)}) from None


def create_filter(
    *,
    director: Director,
    field_name: str,
    regex_text: str,
    case_insensitive: bool = True,
    description: str = "",
    enabled: bool = True,
    order: int | None = None,
    save_attachments: bool = False,
    mail_action: str = "",
    mail_action_folder: str = "",
    mail_action_tag: str = "",
) -> Filter:
    """Validate, then save. An invalid pattern raises ValidationError and nothing is stored."""
    _validated(
        field_name=field_name, regex_text=regex_text, case_insensitive=case_insensitive, description=description.strip()
    )
    mail_action_folder = mail_action_folder.strip() if mail_action == RuleAction.MOVE else ""
    mail_action_tag = _validated_rule(mail_action=mail_action, folder=mail_action_folder, tag=mail_action_tag)
    if order is None:
        last = Filter.objects.filter(director__owner_id=director.owner_id).order_by("-order").first()
        order = (last.order + 1) if last else 0
    return Filter.objects.create(
        director=director,
        field=field_name,
        regex=regex_text,
        case_insensitive=case_insensitive,
        description=description.strip(),
        enabled=enabled,
        order=order,
        save_attachments=save_attachments,
        mail_action=mail_action,
        mail_action_folder=mail_action_folder,
        mail_action_tag=mail_action_tag,
    )


def update_filter(*, item: Filter, **changes: Any) -> Filter:
    allowed = {
        "director",
        "field",
        "regex",
        "case_insensitive",
        "description",
        "enabled",
        "order",
        "save_attachments",
        "mail_action",
        "mail_action_folder",
        "mail_action_tag",
    }
    unknown = set(changes) - allowed
    if unknown:
        raise ValueError(f"cannot change {', '.join(sorted(unknown))}")
    _validated(
        field_name=changes.get("field", item.field),
        regex_text=changes.get("regex", item.regex),
        case_insensitive=changes.get("case_insensitive", item.case_insensitive),
        description=changes.get("description", item.description),
    )
    if {"mail_action", "mail_action_folder", "mail_action_tag"} & set(changes):
        action = changes.get("mail_action", item.mail_action)
        folder = str(changes.get("mail_action_folder", item.mail_action_folder)).strip()
        changes["mail_action_folder"] = folder if action == RuleAction.MOVE else ""
        tag = str(changes.get("mail_action_tag", item.mail_action_tag))
        changes["mail_action_tag"] = _validated_rule(mail_action=action, folder=changes["mail_action_folder"], tag=tag)
    for name, value in changes.items():
        setattr(item, name, value)
    if "regex" in changes or "field" in changes:
        item.error_count, item.last_error, item.last_error_at = 0, "", None
        changes.update(error_count=0, last_error="", last_error_at=None)
    item.save(update_fields=[*changes, "updated_at"])
    return item


def delete_filter(*, item: Filter) -> None:
    item.delete()


def reorder_filters(*, user: Any, ordered_ids: Sequence[int]) -> None:
    owned = {f.pk: f for f in Filter.objects.filter(director__owner=user, pk__in=ordered_ids)}
    changed = []
    for position, pk in enumerate(ordered_ids):
        item = owned.get(pk)
        if item is not None and item.order != position:
            item.order = position
            changed.append(item)
    with transaction.atomic():
        for item in changed:
            item.save(update_fields=["order", "updated_at"])


def record_filter_errors(*, errors: Sequence[FilterError]) -> None:
    """Count evaluation problems on the filter rows (queryset update: the rule-set cache stays valid)."""
    by_filter: dict[int, list[FilterError]] = defaultdict(list)
    for error in errors:
        by_filter[error.filter_id].append(error)
    now = timezone.now()
    for filter_id, items in by_filter.items():
        Filter.objects.filter(pk=filter_id).update(
            error_count=F("error_count") + len(items), last_error=items[-1].error[:2000], last_error_at=now
        )
        logger.warning("filter %s: %s", filter_id, items[-1].error)


# --- routing ----------------------------------------------------------------------------------------


def route_messages(
    *,
    message_ids: list[int],
    fetch_cycle_id: int | None = None,
    respect_creation: bool = True,
    director_ids: set[int] | None = None,
    trigger: str = "route",
) -> RoutingOutcome:
    """Route stored messages to their directors: one run per (message, director), enqueued on commit.

    The runs and the messages' `routed_at` (the outbox) commit together; a partial routing (`director_ids`)
    leaves `routed_at` alone."""
    outcome = selectors.evaluate_messages(
        message_ids=message_ids, respect_creation=respect_creation, director_ids=director_ids
    )
    requests = [
        orchestration_actions.RunRequest(
            message_id=message_id, director_id=match.director_id, filter_id=match.filter_id, match=match.as_json()
        )
        for message_id, match in outcome.routes
    ]
    with transaction.atomic():
        if requests:
            outcome.created_run_ids = orchestration_actions.create_runs(
                requests=requests, fetch_cycle_id=fetch_cycle_id, trigger=trigger
            )
        if director_ids is None:
            # Rules run once, with the routing of new mail (not in a partial replay to some directors).
            outcome.errors.extend(_apply_rule_actions(outcome))
        if director_ids is None:
            outbox.mark_done(kind=HookKind.ROUTE, message_ids=message_ids)
        if fetch_cycle_id is not None:
            FetchCycle.objects.filter(pk=fetch_cycle_id).update(
                runs_created=F("runs_created") + len(outcome.created_run_ids)
            )
    if outcome.errors:
        record_filter_errors(errors=outcome.errors)
    return outcome


def _apply_rule_actions(outcome: RoutingOutcome) -> list[FilterError]:
    """Each matching filter's mail action on its messages, through the accounts' write-back ledger (origin
    "rule"). A rule that cannot apply (no Archive folder, no such folder in that account) is recorded on the
    filter as an error, like a pattern that ran out of time; routing goes on."""
    matched: dict[int, list[int]] = defaultdict(list)
    for message_id, match in outcome.routes:
        matched[match.filter_id].append(message_id)
    rules = Filter.objects.filter(pk__in=list(matched)).exclude(mail_action="").order_by("order", "pk")
    errors: list[FilterError] = []
    done: set[tuple[int, str, str]] = set()
    for rule in rules:
        key = rule.mail_action_tag.casefold()
        wanted = [pk for pk in dict.fromkeys(matched[rule.pk]) if (pk, rule.mail_action, key) not in done]
        done.update((pk, rule.mail_action, key) for pk in wanted)
        for message_id, problem in accounts_actions.apply_rule(
            message_ids=wanted, kind=rule.mail_action, folder=rule.mail_action_folder, tag=rule.mail_action_tag
        ).items():
            errors.append(FilterError(filter_id=rule.pk, message_id=message_id, error=problem))
    return errors


def record_cycle_messages(*, fetch_cycle_id: int, message_ids: list[int]) -> None:
    FetchCycleMessage.objects.bulk_create(
        [FetchCycleMessage(cycle_id=fetch_cycle_id, message_id=pk) for pk in message_ids],
        ignore_conflicts=True,
        batch_size=1000,
    )
    FetchCycle.objects.filter(pk=fetch_cycle_id).update(messages_stored=F("messages_stored") + len(message_ids))


def record_cycle_error(*, fetch_cycle_id: int, error: str) -> None:
    """Append a problem to a cycle (several batches may fail; earlier messages are kept)."""
    cycle = FetchCycle.objects.filter(pk=fetch_cycle_id).only("error").first()
    if cycle is not None:
        combined = f"{cycle.error}\n{error}".strip() if cycle.error else error
        FetchCycle.objects.filter(pk=fetch_cycle_id).update(error=combined[:4000])


# --- fetcher ----------------------------------------------------------------------------------------


def start_fetcher(*, owner: Any, interval_minutes: int | None = None) -> Schedule:
    """Create or re-arm the owner's django-q2 schedule (its interval stays editable in the admin)."""
    schedule = selectors.fetcher_schedule(owner=owner)
    minutes = interval_minutes or (schedule.minutes if schedule and schedule.minutes else None)
    minutes = max(selectors.min_interval_minutes(), int(minutes or selectors.default_interval_minutes()))
    if schedule is None:
        return Schedule.objects.create(
            name=selectors.fetcher_schedule_name(owner_id=owner.pk),
            func="apps.routing.tasks.scheduled_fetch_task",
            kwargs=repr({"owner_id": int(owner.pk)}),
            schedule_type=Schedule.MINUTES,
            minutes=minutes,
            repeats=-1,
            next_run=timezone.now(),
        )
    schedule.minutes = minutes
    schedule.schedule_type = Schedule.MINUTES
    schedule.repeats = -1
    schedule.next_run = timezone.now()
    schedule.save(update_fields=["minutes", "schedule_type", "repeats", "next_run"])
    return schedule


def stop_fetcher(*, owner: Any) -> Schedule | None:
    """repeats=0 makes django-q2's scheduler skip the row; the interval is kept for the next start."""
    schedule = selectors.fetcher_schedule(owner=owner)
    if schedule is not None and schedule.repeats != 0:
        schedule.repeats = 0
        schedule.save(update_fields=["repeats"])
    return schedule


def start_fetch_cycle(*, owner: Any, trigger: str, requested_by: Any = None, enqueue: bool = True) -> FetchCycle:
    """A cycle that syncs the owner's enabled accounts (and only theirs)."""
    if trigger not in CycleTrigger.values:
        raise ValueError(f"unknown trigger {trigger!r}")
    cycle = FetchCycle.objects.create(owner=owner, trigger=trigger, requested_by=requested_by)
    if enqueue:
        transaction.on_commit(
            lambda: async_task("apps.routing.tasks.fetch_cycle_task", cycle.pk, task_name=f"fetch-cycle-{cycle.pk}")
        )
    return cycle


def fail_stalled_cycles() -> int:
    """A worker killed mid-cycle leaves it running: close those older than the job time limit."""
    limit = int(settings.Q_CLUSTER.get("timeout") or 1800) + 60
    cutoff = timezone.now() - dt.timedelta(seconds=limit)
    return FetchCycle.objects.filter(status=CycleStatus.RUNNING, started_at__lt=cutoff).update(
        status=CycleStatus.FAILED, finished_at=timezone.now(), error="the worker stopped before finishing this cycle"
    )


def execute_fetch_cycle(*, cycle_id: int) -> FetchCycle | None:
    """Sync the accounts (new mail is routed by the messages-stored hook under this cycle's id), then,
    for "run" cycles, process the cycle's queued runs here instead of waiting for the queue."""
    cycle = FetchCycle.objects.filter(pk=cycle_id).first()
    if cycle is None:
        return None
    if cycle.status != CycleStatus.RUNNING:
        return cycle  # a retried task: the cycle already finished
    if cycle.owner_id is None:  # a cycle from before fetchers were per owner: nobody's accounts to sync
        FetchCycle.objects.filter(pk=cycle.pk).update(
            status=CycleStatus.FAILED, finished_at=timezone.now(), error="this cycle has no owner"
        )
        cycle.refresh_from_db()
        return cycle
    summary: dict[str, Any] = {}
    try:
        results = sync_all_accounts_task(fetch_cycle_id=cycle.pk, owner_id=cycle.owner_id)
        names = dict(MailAccount.objects.filter(pk__in=[r["account_id"] for r in results]).values_list("pk", "name"))
        for result in results:
            summary[str(result["account_id"])] = {
                "name": names.get(result["account_id"], ""),
                "status": result["status"],
                "created": result["created"],
                "duplicates": result["duplicates"],
                "error": str(result.get("error_message") or "")[:500],
            }
        synced = sum(1 for r in results if r["status"] == "ok")
        failed = sum(1 for r in results if r["status"] == "error")
        FetchCycle.objects.filter(pk=cycle.pk).update(
            accounts=summary, accounts_synced=synced, accounts_failed=failed, synced_at=timezone.now()
        )
        processed = 0
        if cycle.trigger == CycleTrigger.RUN:
            for run_id in selectors.queued_run_ids_for_cycle(cycle_id=cycle.pk):
                if orchestration_actions.process_run(run_id=run_id) is not None:
                    processed += 1
        FetchCycle.objects.filter(pk=cycle.pk).update(
            status=CycleStatus.COMPLETED, finished_at=timezone.now(), runs_processed=processed
        )
    except Exception as exc:
        logger.exception("fetch cycle %s failed", cycle.pk)
        FetchCycle.objects.filter(pk=cycle.pk).update(
            status=CycleStatus.FAILED, finished_at=timezone.now(), error=f"{type(exc).__name__}: {exc}"[:2000]
        )
    cycle.refresh_from_db()
    return cycle
