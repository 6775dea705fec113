"""The home page's reads: every count in one query, then recent runs and the accounts (one query each).

Everything is scoped to the requesting user: another user's rows never reach a count."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db.models import Exists, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from apps.accounts.models import ErrorCategory, MailAccount, Message, SyncStatus
from apps.accounts.selectors import list_accounts_for_user
from apps.llm.models import ApiConfig
from apps.orchestration.models import Approval, ApprovalStatus, Director, Run, RunStatus
from apps.orchestration.selectors import list_runs_for_user
from apps.organization.models import Suggestion, SuggestionStatus
from apps.replies.models import DraftStatus, ReplyDraft
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
    directors_with_model: int
    filters: int
    enabled_filters: int
    runs: int
    active_runs: int
    failed_runs_recent: int
    unread_inbox: int
    pending_suggestions: int
    open_drafts: int
    pending_approvals: int
    # The user finished or skipped the setup wizard (apps/setup), when that app is installed.
    setup_closed: bool = False


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
    setup_skip_url: str
    drafts_url: str

    @property
    def setup_complete(self) -> bool:
        return all(step.done for step in self.setup_steps)

    @property
    def show_checklist(self) -> bool:
        """Until every step is done, unless the user finished or skipped the setup wizard."""
        return not self.setup_complete and not self.counts.setup_closed

    @property
    def setup_done_count(self) -> int:
        return sum(step.done for step in self.setup_steps)


def _setup_state_model() -> Any:
    """The setup wizard's per-user state (apps/setup), or None while that app is not installed."""
    try:
        return apps.get_model("setup", "SetupState")
    except LookupError:
        return None


COUNTED = (
    "messages",
    "unread_messages",
    "accounts",
    "api_configs",
    "directors",
    "directors_with_model",
    "filters",
    "enabled_filters",
    "runs",
    "active_runs",
    "failed_runs_recent",
    "unread_inbox",
    "pending_suggestions",
    "open_drafts",
    "pending_approvals",
)


def count_for_user(*, user: Any, now: dt.datetime | None = None) -> Counts:
    """Every number the home page shows, in one query (scalar subqueries on the user's own row)."""
    since = (now or timezone.now()) - dt.timedelta(days=FAILED_RUNS_WINDOW_DAYS)
    runs = Run.objects.filter(director__owner=user)
    filters = Filter.objects.filter(director__owner=user)
    messages = Message.objects.filter(account__owner=user)
    directors = Director.objects.filter(owner=user)
    subqueries: dict[str, Any] = {
        "messages": _count(messages),
        "unread_messages": _count(messages.filter(seen=False)),
        "accounts": _count(MailAccount.objects.filter(owner=user)),
        "api_configs": _count(ApiConfig.objects.filter(owner=user)),
        "directors": _count(directors),
        "directors_with_model": _count(directors.filter(api_config__isnull=False)),
        "filters": _count(filters),
        "enabled_filters": _count(filters.filter(enabled=True)),
        "runs": _count(runs),
        "active_runs": _count(runs.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])),
        "failed_runs_recent": _count(runs.filter(status=RunStatus.FAILED, created_at__gte=since)),
        "unread_inbox": _count(InboxEntry.objects.filter(owner=user, read_at__isnull=True)),
        "pending_suggestions": _count(
            Suggestion.objects.filter(file__library__owner=user, status=SuggestionStatus.PENDING)
        ),
        "open_drafts": _count(
            ReplyDraft.objects.filter(owner=user, status__in=[DraftStatus.DRAFT, DraftStatus.FAILED])
        ),
        "pending_approvals": _count(Approval.objects.filter(owner=user, status=ApprovalStatus.PENDING)),
    }
    annotations = {f"n_{name}": subquery for name, subquery in subqueries.items()}
    setup_state = _setup_state_model()
    if setup_state is not None:
        annotations["n_setup_closed"] = Exists(
            setup_state.objects.filter(owner=OuterRef("pk")).filter(
                Q(dismissed_at__isnull=False) | Q(completed_at__isnull=False)
            )
        )
    row = get_user_model().objects.filter(pk=user.pk).annotate(**annotations).values(*annotations).get()
    return Counts(**{name: row[f"n_{name}"] for name in COUNTED}, setup_closed=bool(row.get("n_setup_closed", False)))


def first_url(name: str, *, query: str = "", **kwargs: Any) -> str:
    """The URL of a page that may not be mounted (other apps add pages over time): "" when it is not."""
    try:
        return reverse(name, kwargs=kwargs or None) + query
    except NoReverseMatch:
        return ""


def needs_reauthorization(account: MailAccount) -> bool:
    return account.last_sync_status == SyncStatus.ERROR and account.last_error_category in REAUTH_CATEGORIES


def setup_steps(*, user: Any, counts: Counts) -> list[SetupStep]:
    """The first-run checklist, read from the user's data; each open step links to the wizard's step when
    the wizard exists, else to the page where it is done."""

    def step_url(step: str, *fallbacks: str) -> str:
        for url in (first_url("setup:step", step=step), *fallbacks):
            if url:
                return url
        return ""

    admin_add_model = first_url("admin:llm_apiconfig_add") if user.is_staff else ""
    return [
        SetupStep(
            "account",
            "Connect a mailbox or import mail",
            counts.accounts > 0,
            step_url("mailbox", first_url("mail:accounts")),
            "Add an account",
        ),
        SetupStep(
            "api_config",
            "Add a model (an OpenAI-compatible API config)",
            counts.api_configs > 0,
            step_url("model", first_url("settings:models"), admin_add_model),
            "Add a model",
        ),
        SetupStep(
            "director",
            "Create a director that uses the model",
            counts.directors_with_model > 0,
            step_url("director", first_url("settings:directors"), first_url("routing:filters")),
            "Create a director",
        ),
        SetupStep(
            "filter",
            "Add a filter that routes mail to it",
            counts.filters > 0,
            step_url("filter", first_url("settings:filters"), first_url("routing:filters")),
            "Add a filter",
        ),
        SetupStep("run", "See a first run", counts.runs > 0, first_url("runs:list"), "Open Runs"),
    ]


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


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
    drafts_url = first_url("replies:drafts")
    days = FAILED_RUNS_WINDOW_DAYS
    attention = [
        AttentionItem(
            "approvals",
            counts.pending_approvals,
            _plural(
                counts.pending_approvals, "request waiting for your approval", "requests waiting for your approval"
            ),
            first_url("runs:approvals"),
        ),
        AttentionItem(
            "inbox",
            counts.unread_inbox,
            _plural(counts.unread_inbox, "unread Inbox entry", "unread Inbox entries"),
            first_url("inbox:inbox"),
        ),
        AttentionItem(
            "drafts",
            counts.open_drafts,
            _plural(counts.open_drafts, "reply draft not sent yet", "reply drafts not sent yet"),
            drafts_url,
        ),
        AttentionItem(
            "suggestions",
            counts.pending_suggestions,
            _plural(counts.pending_suggestions, "folder suggestion to review", "folder suggestions to review"),
            first_url("organization:page"),
        ),
        AttentionItem(
            "failed_runs",
            counts.failed_runs_recent,
            _plural(counts.failed_runs_recent, "failed run", "failed runs") + f" in the last {days} days",
            first_url("runs:list", query=f"?status={RunStatus.FAILED}"),
        ),
    ]
    return Dashboard(
        counts=counts,
        attention=[item for item in attention if item.count],
        accounts=accounts,
        reauth_accounts=reauth,
        failing_accounts=failing,
        recent_runs=recent_runs,
        setup_steps=setup_steps(user=user, counts=counts),
        setup_url=first_url("setup:index"),
        setup_skip_url=first_url("setup:skip"),
        drafts_url=drafts_url,
    )
