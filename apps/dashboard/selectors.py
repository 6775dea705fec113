"""The home page's reads: every count in one query, then recent runs and the accounts (one query each).

Everything is scoped to the requesting user: another user's rows never reach a count."""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import IntegerField, QuerySet, Subquery
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from apps.accounts.models import ErrorCategory, MailAccount, Message, SyncStatus
from apps.accounts.selectors import list_accounts_for_user
from apps.orchestration.models import ApiConfig, Director, Run, RunStatus
from apps.orchestration.selectors import list_runs_for_user
from apps.organization.models import Suggestion, SuggestionStatus
from apps.routing.models import Filter
from apps.workspaces.models import InboxEntry

RECENT_RUNS = 6
FAILED_RUNS_WINDOW_DAYS = 7
# A failed sync with one of these needs the owner to sign in (OAuth) or enter the password (IMAP) again.
REAUTH_CATEGORIES = {ErrorCategory.INVALID_GRANT, ErrorCategory.MISSING_REFRESH_TOKEN, ErrorCategory.AUTH}


class SubqueryCount(Subquery):
    """COUNT(*) of a queryset as a scalar subquery, so many counts travel in one SELECT."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) _count)"
    output_field = IntegerField()


def _count(queryset: QuerySet[Any]) -> SubqueryCount:
    return SubqueryCount(queryset.order_by().values("pk"))


@dataclass(frozen=True, slots=True)
class Counts:
    messages: int
    unread_messages: int
    accounts: int
    api_configs: int
    directors: int
    filters: int
    enabled_filters: int
    runs: int
    active_runs: int
    failed_runs_recent: int
    unread_inbox: int
    pending_suggestions: int


@dataclass(frozen=True, slots=True)
class AttentionItem:
    key: str
    count: int
    label: str
    url: str


@dataclass(frozen=True, slots=True)
class SetupStep:
    key: str
    label: str
    done: bool
    url: str
    action: str


@dataclass(slots=True)
class Dashboard:
    counts: Counts
    attention: list[AttentionItem]
    accounts: list[MailAccount]
    reauth_accounts: list[MailAccount]
    failing_accounts: list[MailAccount]
    recent_runs: list[Run]
    setup_steps: list[SetupStep]
    setup_url: str
    drafts: int | None = None
    drafts_url: str = ""

    @property
    def setup_complete(self) -> bool:
        return all(step.done for step in self.setup_steps)

    @property
    def setup_done_count(self) -> int:
        return sum(step.done for step in self.setup_steps)


def count_for_user(*, user: Any, now: dt.datetime | None = None) -> Counts:
    """Every number the home page shows, in one query (scalar subqueries on the user's own row)."""
    since = (now or timezone.now()) - dt.timedelta(days=FAILED_RUNS_WINDOW_DAYS)
    runs = Run.objects.filter(director__owner=user)
    filters = Filter.objects.filter(director__owner=user)
    messages = Message.objects.filter(account__owner=user)
    row = (
        get_user_model()
        .objects.filter(pk=user.pk)
        .annotate(
            n_messages=_count(messages),
            n_unread_messages=_count(messages.filter(seen=False)),
            n_accounts=_count(MailAccount.objects.filter(owner=user)),
            n_api_configs=_count(ApiConfig.objects.filter(owner=user)),
            n_directors=_count(Director.objects.filter(owner=user)),
            n_filters=_count(filters),
            n_enabled_filters=_count(filters.filter(enabled=True)),
            n_runs=_count(runs),
            n_active_runs=_count(runs.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])),
            n_failed_runs=_count(runs.filter(status=RunStatus.FAILED, created_at__gte=since)),
            n_unread_inbox=_count(InboxEntry.objects.filter(owner=user, read_at__isnull=True)),
            n_pending_suggestions=_count(
                Suggestion.objects.filter(file__library__owner=user, status=SuggestionStatus.PENDING)
            ),
        )
        .values(
            "n_messages",
            "n_unread_messages",
            "n_accounts",
            "n_api_configs",
            "n_directors",
            "n_filters",
            "n_enabled_filters",
            "n_runs",
            "n_active_runs",
            "n_failed_runs",
            "n_unread_inbox",
            "n_pending_suggestions",
        )
        .get()
    )
    return Counts(
        messages=row["n_messages"],
        unread_messages=row["n_unread_messages"],
        accounts=row["n_accounts"],
        api_configs=row["n_api_configs"],
        directors=row["n_directors"],
        filters=row["n_filters"],
        enabled_filters=row["n_enabled_filters"],
        runs=row["n_runs"],
        active_runs=row["n_active_runs"],
        failed_runs_recent=row["n_failed_runs"],
        unread_inbox=row["n_unread_inbox"],
        pending_suggestions=row["n_pending_suggestions"],
    )


def first_url(*names: str, query: str = "") -> str:
    """The first of these URL names that the project mounts (pages other helpers add may not exist yet)."""
    for name in names:
        try:
            return reverse(name) + query
        except NoReverseMatch:
            continue
    return ""


def _optional(module: str, attribute: str) -> Callable[..., Any] | None:
    """A function of an app that may not be installed (drafts come from the replies app when it exists)."""
    try:
        found = getattr(importlib.import_module(module), attribute, None)
    except ImportError:
        return None
    return found if callable(found) else None


def needs_reauthorization(account: MailAccount) -> bool:
    return account.last_sync_status == SyncStatus.ERROR and account.last_error_category in REAUTH_CATEGORIES


def setup_steps(*, user: Any, counts: Counts) -> list[SetupStep]:
    api_config_url = first_url("setup:model", "settings:api_configs", "orchestration:api_configs")
    if not api_config_url and user.is_staff:
        api_config_url = first_url("admin:orchestration_apiconfig_add")
    return [
        SetupStep(
            "account",
            "Connect a mailbox or import mail",
            counts.accounts > 0,
            first_url("setup:mailbox", "mail:accounts"),
            "Add an account",
        ),
        SetupStep(
            "api_config",
            "Add a model (an OpenAI-compatible API config)",
            counts.api_configs > 0,
            api_config_url,
            "Add a model",
        ),
        SetupStep(
            "director",
            "Create a director",
            counts.directors > 0,
            first_url("setup:director", "routing:filters"),
            "Create a director",
        ),
        SetupStep(
            "filter",
            "Add a filter that routes mail to it",
            counts.filters > 0,
            first_url("setup:filter", "routing:filters"),
            "Add a filter",
        ),
        SetupStep(
            "run",
            "See a first run",
            counts.runs > 0,
            first_url("runs:list"),
            "Open Runs",
        ),
    ]


def dashboard_for_user(*, user: Any) -> Dashboard:
    counts = count_for_user(user=user)
    accounts = list(list_accounts_for_user(user=user)) if counts.accounts else []
    recent_runs = list(list_runs_for_user(user=user)[:RECENT_RUNS]) if counts.runs else []
    reauth = [account for account in accounts if needs_reauthorization(account)]
    failing = [
        account
        for account in accounts
        if account.last_sync_status == SyncStatus.ERROR and not needs_reauthorization(account)
    ]
    attention = [
        AttentionItem(
            "inbox",
            counts.unread_inbox,
            "unread Inbox entries" if counts.unread_inbox != 1 else "unread Inbox entry",
            first_url("inbox:inbox"),
        ),
        AttentionItem(
            "suggestions",
            counts.pending_suggestions,
            "folder suggestions to review" if counts.pending_suggestions != 1 else "folder suggestion to review",
            first_url("organization:page"),
        ),
        AttentionItem(
            "failed_runs",
            counts.failed_runs_recent,
            f"failed runs in the last {FAILED_RUNS_WINDOW_DAYS} days"
            if counts.failed_runs_recent != 1
            else f"failed run in the last {FAILED_RUNS_WINDOW_DAYS} days",
            first_url("runs:list", query=f"?status={RunStatus.FAILED}"),
        ),
    ]
    dashboard = Dashboard(
        counts=counts,
        attention=[item for item in attention if item.count],
        accounts=accounts,
        reauth_accounts=reauth,
        failing_accounts=failing,
        recent_runs=recent_runs,
        setup_steps=setup_steps(user=user, counts=counts),
        setup_url=first_url("setup:wizard", "setup:start", "setup:index", "setup:home"),
    )
    drafts = _optional("apps.replies.selectors", "count_drafts_for_user")
    if drafts is not None:
        dashboard.drafts = int(drafts(user=user))
        dashboard.drafts_url = first_url("replies:list", "replies:drafts")
        if dashboard.drafts:
            dashboard.attention.append(
                AttentionItem(
                    "drafts",
                    dashboard.drafts,
                    "reply drafts to review" if dashboard.drafts != 1 else "reply draft to review",
                    dashboard.drafts_url,
                )
            )
    return dashboard
