"""Tenancy walk: two users, each with a full set of data, and every page and API route of the real URLconf.

Logged in as Alpha, every route is requested with Bravo's ids (and every method): the answer is 404 for
Bravo's objects (or 405 for a method the route does not have), never 403, never Bravo's data, and Bravo's
rows are unchanged afterwards. Routes without ids must not show anything of Bravo's either. The same routes
with Alpha's own ids answer, so a 404 is not just a wrong id. A route with an id parameter this test does not
know fails the test: new routes must be added here. Staff-only routes (diagnostics) refuse a non-staff
user whatever the id (their own, another user's or none): 403 from the API, a redirect to the staff login
from the pages, which tells nothing about whose an object is.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import URLPattern, URLResolver, get_resolver

from apps.accounts.actions import add_tag, create_local_account
from apps.accounts.models import Attachment, MailAccount, MailAction, Message, MessageTag
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.ask import actions as ask_actions
from apps.ask.models import AskConversation, AskRun
from apps.ask.models import Draft as AskDraft
from apps.orchestration import actions as orchestration_actions
from apps.orchestration import models as orchestration_models
from apps.orchestration.models import (
    Approval,
    Conversation,
    Memory,
    OrchLog,
    Prompt,
    PromptMessage,
    Run,
    ThreadKind,
)
from apps.replies import actions as reply_actions
from apps.replies.models import ReplyDraft
from apps.routing import actions as routing_actions
from apps.routing.models import FetchCycle, Filter
from apps.search import actions as search_actions
from apps.search.models import SavedSearch
from apps.workspaces import actions as workspace_actions
from apps.workspaces.models import InboxEntry, WorkspaceItem, WorkspaceToken

pytestmark = pytest.mark.django_db

SECRET = "bravo-secret"
METHODS = ("get", "post", "put", "patch", "delete")
# Not user data: the login/signup/password-reset machinery of allauth, the admin (scoped separately, see
# test_admin_scoping.py), the API's schema and docs, and the API's logout (it ends the walker's own session,
# so every later request would answer 401; tests/orchestration/test_spec_api.py covers it).
SKIPPED_PREFIXES = ("admin/", "accounts/", "api/openapi.json", "api/docs", "api/auth/logout")
# Staff only (the seed: diagnostics are the admin's): Alpha and Bravo are not staff.
STAFF_ONLY_PREFIXES = ("diagnostics/", "runs/diagnostics/", "api/diagnostics/")
_numbers = itertools.count(1)


@dataclass
class Tenant:
    user: Any
    ids: dict[str, Any] = field(default_factory=dict)


def _raw_message(label: str, number: int) -> bytes:
    mail = EmailMessage()
    mail["From"] = f"{label}-secret sender <{label}@example.com>"
    mail["To"] = f"{label}@example.com"
    mail["Subject"] = f"{label}-secret subject {number}"
    mail["Message-ID"] = f"<{label}-{number}@tenancy.test>"
    mail["Date"] = "Fri, 20 Nov 2026 10:00:00 +0000"
    mail.set_content(f"{label}-secret body text {number}")
    mail.add_attachment(f"{label}-secret attachment".encode(), maintype="text", subtype="plain", filename="a.txt")
    return mail.as_bytes()


def _tenant(label: str) -> Tenant:
    user = get_user_model().objects.create_user(
        username=label, email=f"{label}@example.com", password="tenancy-password-42"
    )
    account = create_local_account(owner=user, name=f"{label}-secret box", address=f"{label}@example.com")
    number = next(_numbers)
    stored = store_remote_messages(
        account=account,
        messages=[RemoteMessage(provider_id=f"{label}:{number}", raw=_raw_message(label, number), folder="INBOX")],
    )
    message = Message.objects.get(pk=stored.created_ids[0])
    director = orchestration_actions.create_director(owner=user, name=f"{label}-secret director")
    rule = routing_actions.create_filter(director=director, field_name="subject", regex_text=f"{label}-secret")
    model = orchestration_models.ApiConfig.objects.create(
        owner=user, name=f"{label}-secret model", model=f"{label}-secret-model", api_key=f"{label}-secret key"
    )
    agent = orchestration_models.Agent.objects.create(director=director, name=f"{label}-secret agent", slug="agent")
    (run_id,) = orchestration_actions.create_runs(
        requests=[orchestration_actions.RunRequest(message_id=message.pk, director_id=director.pk, filter_id=rule.pk)],
        fetch_cycle_id=None,
    )
    run = Run.objects.get(pk=run_id)
    thread = Conversation.objects.create(run=run, kind=ThreadKind.DIRECTOR, director=director)
    log = OrchLog.objects.create(run=run, director=director, dir_thread=thread, phase="director")
    workspace = workspace_actions.open_workspace(
        owner=user,
        run_id=run.pk,
        message_id=message.pk,
        director_id=director.pk,
        director_name=director.name,
        title=f"{label}-secret workspace",
    )
    item = WorkspaceItem.objects.create(workspace=workspace, label=f"{label}-secret item", data=f"{label}-secret data")
    token = WorkspaceToken.objects.create(
        workspace=workspace, name=f"{label}-secret token", token_hash=hashlib.sha256(label.encode()).hexdigest(),
        prefix=label[:8],
    )  # fmt: skip
    entry = InboxEntry.objects.create(
        owner=user, workspace=workspace, workspace_label=f"{label}-secret label", comments=f"{label}-secret comment"
    )
    memory = Memory.objects.create(owner=user, director=director, content=f"{label}-secret memory", scope="global")
    prompt = Prompt.objects.create(owner=user, name=f"{label}-secret prompt")
    PromptMessage.objects.create(prompt=prompt, role="system", content=f"{label}-secret prompt text")
    template = Prompt.objects.create(owner=user, name=f"{label}-secret template", is_template=True)
    PromptMessage.objects.create(prompt=template, role="system", content=f"{label}-secret template text")
    approval = Approval.objects.create(
        owner=user, run=run, account=account, provider="outlook", calendar="default", summary=f"{label}-secret meeting",
        attendees=[f"{label}-secret@example.com"],
        request={"method": "POST", "api": "graph", "path": "/me/events", "json": {"subject": f"{label}-secret"}},
    )  # fmt: skip
    ask = ask_actions.create_ask_run(owner=user, question=f"{label}-secret question")
    cycle = FetchCycle.objects.create(owner=user, trigger="fetch", error=f"{label}-secret cycle")
    reply = reply_actions.create_draft_from_item(owner=user, item=item)
    add_tag(owner=user, messages=[message], name=f"{label}-secret-tag")
    saved = search_actions.create_saved_search(owner=user, name=f"{label}-secret search", query=f"{label}-secret")
    ask_draft = AskDraft.objects.create(owner=user, account=account, subject=f"{label}-secret ask draft", body="x")
    ids: dict[str, Any] = {
        "account_id": account.pk,
        "message_id": message.pk,
        "thread_id": message.thread_id,
        "attachment_id": Attachment.objects.get(message=message).pk,
        "filter_id": rule.pk,
        "config_id": model.pk,
        "director_id": director.pk,
        "agent_id": agent.pk,
        "workspace_id": workspace.pk,
        "item_id": item.pk,
        "token_id": token.pk,
        "entry_id": entry.pk,
        "memory_id": memory.pk,
        "approval_id": approval.pk,
        "prompt_id": prompt.pk,
        "template_id": template.pk,
        "node_id": f"log:{log.pk}",
        "cycle_id": cycle.pk,
        "ask_run_id": ask.pk,
        "conversation_id": ask.conversation_id,
        "draft_id": reply.pk,
        "ask_draft_id": ask_draft.pk,
        "saved_search_id": saved.pk,
        "orchestration_run_id": run.pk,
        "action_id": MailAction.objects.create(
            account=account, message=message, kind="read", status="done", source_folders=["INBOX"]
        ).pk,
    }
    for provider in ("gmail", "outlook"):  # the provider-specific connection tests need their kind of account
        ids[f"{provider}_account_id"] = MailAccount.objects.create(
            owner=user, provider=provider, name=f"{label}-secret {provider}", address=f"{label}@{provider}.test"
        ).pk
    ids.update(_organization(user, label))
    return Tenant(user=user, ids=ids)


def _organization(user: Any, label: str) -> dict[str, Any]:
    from apps.organization.models import GuidelineProposal, Library, LibraryFile, Move, Suggestion

    library = Library.objects.create(owner=user, root=f"/nonexistent/{label}-library")
    file = LibraryFile.objects.create(library=library, path=f"inbox/{label}-secret.pdf", sha256="0" * 64)
    suggestion = Suggestion.objects.create(file=file, target_folder=f"{label}-secret folder", file_sha256="0" * 64)
    move = Move.objects.create(
        library=library, file=file, from_path=f"inbox/{label}-secret.pdf", to_path="done/x.pdf", sha256="0" * 64,
        reason="accept",
    )  # fmt: skip
    proposal = GuidelineProposal.objects.create(library=library, text=f"{label}-secret guideline")
    return {"suggestion_id": suggestion.pk, "move_id": move.pk, "proposal_id": proposal.pk, "file_id": file.pk}


def _param_value(name: str, route: str, tenant: Tenant) -> Any:
    if name == "run_id":  # runs/<int:run_id>/ are director runs; ask/… and api/ask/… are Ask runs
        return tenant.ids["ask_run_id" if route.startswith(("ask/", "api/ask")) else "orchestration_run_id"]
    if name == "prompt_id" and route.startswith("api/prompt-templates/"):  # only templates live there
        return tenant.ids["template_id"]
    if name == "account_id" and route.endswith(("gmail-test", "outlook-test")):
        return tenant.ids[f"{route.rsplit('/', 1)[1].removesuffix('-test')}_account_id"]
    if name == "command":
        return "start"
    if name == "step":  # a setup wizard step, not an object
        return "model"
    if name == "decision":
        return "accept"
    if name not in tenant.ids:
        raise AssertionError(f"{route}: no test data for the path parameter {name!r}; add it to test_tenancy.py")
    return tenant.ids[name]


def _routes() -> Iterator[str]:
    def walk(patterns: list[Any], prefix: str) -> Iterator[str]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern)

    seen: set[str] = set()
    for route in walk(get_resolver().url_patterns, ""):
        if route.startswith(SKIPPED_PREFIXES) or route.startswith("^") or route in seen:
            continue
        seen.add(route)
        yield route


def _url(route: str, tenant: Tenant) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(_param_value(m.group(1), route, tenant)), route)


# One body that satisfies every write schema's required fields (extra fields are ignored), so each write
# reaches its ownership check instead of stopping at body validation.
WRITE_BODY = {
    "patch": {"label": "hijacked"}, "text": "hijacked", "action": "reject", "label": "hijacked", "name": "hijacked",
    "query": "hijacked",
}  # fmt: skip
NOT_IDS = ("command", "step")  # path parameters that name an operation, not an object


def _request(client: Any, method: str, url: str) -> Any:
    if url.startswith("/api/") and method in ("post", "put", "patch"):
        return getattr(client, method)(url, data=WRITE_BODY, content_type="application/json")
    if method == "post":
        return client.post(url, data=WRITE_BODY)
    return getattr(client, method)(url)


def _has_ids(route: str) -> bool:
    return any(name not in NOT_IDS for name in re.findall(r"<(?:\w+:)?(\w+)>", route))


def _snapshot(tenant: Tenant) -> dict[str, Any]:
    user = tenant.user
    return {
        "accounts": list(MailAccount.objects.filter(owner=user).values_list("pk", "name", "enabled")),
        "messages": list(Message.objects.filter(account__owner=user).values_list("pk", "subject")),
        "filters": list(Filter.objects.filter(director__owner=user).values_list("pk", "enabled", "regex")),
        "runs": list(Run.objects.filter(director__owner=user).values_list("pk", "status")),
        "items": list(WorkspaceItem.objects.filter(workspace__owner=user).values_list("pk", "data", "deleted")),
        "tokens": list(WorkspaceToken.objects.filter(workspace__owner=user).values_list("pk", "revoked_at")),
        "entries": list(InboxEntry.objects.filter(owner=user).values_list("pk", "read_at", "reply")),
        "memories": [
            (m.pk, m.content, m.scope, m.director_id, m.agent_id, m.tags) for m in Memory.objects.filter(owner=user)
        ],
        "api_configs": list(
            orchestration_models.ApiConfig.objects.filter(owner=user).values_list("pk", "name", "model", "base_url")
        ),
        "directors": list(
            orchestration_models.Director.objects.filter(owner=user).values_list(
                "pk", "name", "enabled", "api_config", "prompt", "imprint", "memory_access", "step_limit", "accounts"
            )
        ),
        "agents": list(
            orchestration_models.Agent.objects.filter(director__owner=user).values_list(
                "pk", "name", "order", "slug", "summary", "allowed_tools", "prompt", "api_config", "enabled"
            )
        ),
        "approvals": list(Approval.objects.filter(owner=user).values_list("pk", "status", "attempts")),
        "prompts": list(PromptMessage.objects.filter(prompt__owner=user).values_list("pk", "content")),
        "prompt_names": list(Prompt.objects.filter(owner=user).values_list("pk", "name", "is_template")),
        "ask_runs": list(AskRun.objects.filter(owner=user).values_list("pk", "status", "conversation_id")),
        "ask_conversations": list(AskConversation.objects.filter(owner=user).values_list("pk", "archived_at")),
        "tags": list(MessageTag.objects.filter(tag__owner=user).values_list("message_id", "tag__name")),
        "saved_searches": list(SavedSearch.objects.filter(owner=user).values_list("pk", "name", "query")),
        "reply_drafts": list(ReplyDraft.objects.filter(owner=user).values_list("pk", "body", "status", "revision")),
    }


def test_no_route_shows_or_changes_another_users_data(client: Any) -> None:
    alpha, bravo = _tenant("alpha"), _tenant("bravo")
    before = _snapshot(bravo)
    client.force_login(alpha.user)
    problems: list[str] = []
    routes = list(_routes())
    assert len(routes) > 60, routes  # the URLconf really was walked

    for route in routes:
        has_ids = _has_ids(route)
        url = _url(route, bravo)
        for method in METHODS:
            response = _request(client, method, url)
            body = response.content.decode(errors="replace")
            if SECRET in body:
                problems.append(f"{method.upper()} {url}: {response.status_code} shows Bravo's data")
            if route.startswith(STAFF_ONLY_PREFIXES):
                # The API refuses (403); the pages send to the admin's staff login (302).
                if response.status_code not in (302, 403, 405):
                    problems.append(
                        f"{method.upper()} {url}: {response.status_code} for a non-staff user (expected 403 or 302)"
                    )
                continue
            if has_ids and response.status_code == 403:
                problems.append(f"{method.upper()} {url}: 403 (must be 404 for another user's objects)")
            if response.status_code >= 500:
                problems.append(f"{method.upper()} {url}: server error {response.status_code}")
            if has_ids and response.status_code not in (404, 405):
                problems.append(f"{method.upper()} {url}: {response.status_code} for Bravo's ids (expected 404)")

    assert problems == [], "\n".join(problems)
    assert _snapshot(bravo) == before


def test_the_same_routes_answer_with_ones_own_ids(client: Any) -> None:
    """The control: the ids the walk substitutes are real, so a 404 above means "not yours"."""
    alpha = _tenant("alpha")
    _tenant("bravo")
    client.force_login(alpha.user)
    not_found = []
    for route in _routes():
        if not _has_ids(route):
            continue
        response = client.get(_url(route, alpha))
        if response.status_code == 404:
            not_found.append(route)
    assert not_found == []


def test_unknown_ids_are_404_too(client: Any) -> None:
    alpha = _tenant("alpha")
    client.force_login(alpha.user)
    missing = Tenant(user=alpha.user, ids={name: (uuid.uuid4() if isinstance(value, uuid.UUID) else 10**9)
                                         for name, value in alpha.ids.items()})  # fmt: skip
    missing.ids["node_id"] = "log:1000000000"
    for route in _routes():
        if _has_ids(route):
            expected = (302, 403, 405) if route.startswith(STAFF_ONLY_PREFIXES) else (404, 405)
            assert client.get(_url(route, missing)).status_code in expected, route
