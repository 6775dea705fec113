"""Every route the product links to exists in the real URLconf, and every route that exists is known.

- The inventory: every URL pattern of mailagent/urls.py, every API operation of /api/openapi.json and every
  websocket route of mailagent/asgi.py, checked against the lists below. A route that disappears (or appears
  without anyone deciding it should) fails here.
- The walk: a staff user with real data (the demo mailbox, an IMAP account, a filter, a director, a run, a
  memory, an Ask run) visits every page reachable from the home page; every `href`, `hx-get`, `hx-post`,
  `hx-put`, `hx-delete`, `action` and `ws-connect` in the HTML, and every URL in the project's static
  JavaScript, must resolve against mailagent/urls.py or the ASGI websocket routes. Every page template must
  have been rendered by the walk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404

from apps.accounts.actions import create_imap_account, fetch_attachment_bytes
from apps.accounts.demo_mailbox.importing import import_demo_mailbox
from apps.accounts.demo_mailbox.model import DEMO_ACCOUNT_NAME
from apps.accounts.models import Attachment, MailAccount, Message
from apps.ask.actions import create_ask_run
from apps.llm.actions import create_api_config
from apps.orchestration.actions import RunRequest, create_director, create_runs
from apps.orchestration.approvals import request_calendar_approval
from apps.orchestration.config_actions import create_agent, create_prompt
from apps.orchestration.models import Memory, Run
from apps.organization.library import get_library
from apps.organization.models import LibraryFile, Suggestion
from apps.replies.actions import create_draft_from_item
from apps.routing.actions import create_filter
from apps.workspaces.actions import add_item, create_user_workspace, open_workspace, push_inbox_entry
from mailagent.api import api

pytestmark = pytest.mark.django_db

REPO_ROOT = Path(settings.BASE_DIR)

# Django URL patterns of mailagent/urls.py. The admin and the JSON API are listed once here: the API's
# operations are inventoried separately below, the admin's pages are Django's own.
EXPECTED_URL_PATTERNS = {
    "",
    "diagnostics/",
    "accounts/login/",
    "accounts/logout/",
    "accounts/inactive/",
    "accounts/signup/",
    "accounts/reauthenticate/",
    "accounts/email/",
    "accounts/confirm-email/",
    r"accounts/^confirm-email/(?P<key>[-:\w]+)/$",
    "accounts/password/change/",
    "accounts/password/set/",
    "accounts/password/reset/",
    "accounts/password/reset/done/",
    "accounts/^password/reset/key/(?P<uidb36>[0-9A-Za-z]+)-(?P<key>.+)/$",
    "accounts/password/reset/key/done/",
    "accounts/login/code/confirm/",
    "accounts/3rdparty/",
    "accounts/3rdparty/login/cancelled/",
    "accounts/3rdparty/login/error/",
    "accounts/3rdparty/signup/",
    "accounts/social/login/cancelled/",
    "accounts/social/login/error/",
    "accounts/social/signup/",
    "accounts/social/connections/",
    "mail/",
    "mail/threads/<int:thread_id>/",
    "mail/threads/<int:thread_id>/unread/",
    "mail/threads/<int:thread_id>/action/",
    "mail/threads/<int:thread_id>/tags/",
    "mail/server-changes/<int:action_id>/undo/",
    "mail/messages/<int:message_id>/",
    "mail/attachments/<int:attachment_id>/download/",
    "mail/accounts/",
    "mail/accounts/add-imap/",
    "mail/accounts/import/",
    "mail/accounts/imports/",
    "mail/accounts/<int:account_id>/",
    "mail/accounts/<int:account_id>/sync/",
    "mail/accounts/<int:account_id>/signature/",
    "mail/accounts/<int:account_id>/enabled/",
    "mail/accounts/<int:account_id>/remove/",
    "mail/oauth/gmail/connect/",
    "mail/oauth/gmail/callback/",
    "mail/oauth/outlook/connect/",
    "mail/oauth/outlook/callback/",
    "search/",
    "search/files/<int:file_id>/thumbnail/",
    "search/progress/",
    "search/saved/",
    "search/saved/<int:saved_search_id>/delete/",
    "routing/filters/",
    "routing/filters/test/",
    "routing/filters/<int:filter_id>/delete/",
    "routing/fetcher/",
    "routing/fetcher/status/",
    "routing/fetcher/<str:command>/",
    "routing/threads/<int:thread_id>/run-director/",
    "runs/",
    "runs/table/",
    "runs/<int:run_id>/",
    "runs/<int:run_id>/live/",
    "runs/<int:run_id>/retry/",
    "runs/items/<int:item_id>/download/",
    "runs/diagnostics/",
    "runs/diagnostics/node/",
    "runs/diagnostics/delete/",
    "runs/approvals/",
    "runs/approvals/<int:approval_id>/",
    "runs/approvals/<int:approval_id>/approve/",
    "runs/approvals/<int:approval_id>/reject/",
    "runs/memory/",
    "prompts/",
    "prompts/new/",
    "prompts/<int:prompt_id>/",
    "prompts/<int:prompt_id>/save/",
    "prompts/<int:prompt_id>/preview/",
    "prompts/<int:prompt_id>/try/",
    "prompts/<int:prompt_id>/duplicate/",
    "runs/memory/<int:memory_id>/edit/",
    "runs/memory/<int:memory_id>/delete/",
    "ask/",
    "ask/runs/",
    "ask/runs/<uuid:run_id>/",
    "ask/runs/<uuid:run_id>/proposal/",
    "ask/settings/",
    "ask/settings/test/",
    "ask/files/<int:file_id>/",
    "organize/",
    "organize/guideline/",
    "organize/moves/<int:move_id>/undo/",
    "organize/proposals/<int:proposal_id>/<str:decision>/",
    "organize/scan/",
    "organize/settings/",
    "organize/suggestions/<int:suggestion_id>/respond/",
    "organize/suggestions/<int:suggestion_id>/transcript/",
    "organize/suggestions/bulk-accept/",
    "organize/upload/",
    "replies/",
    "replies/new/item/<int:item_id>/",
    "replies/new/ask-draft/<int:ask_draft_id>/",
    "replies/<int:draft_id>/",
    "replies/<int:draft_id>/mode/",
    "replies/<int:draft_id>/confirm/",
    "replies/<int:draft_id>/send/",
    "replies/<int:draft_id>/consent/",
    "replies/<int:draft_id>/discard/",
    "replies/accounts/<int:account_id>/smtp/",
    "results/",
    "results/tree/",
    "results/emails/<int:message_id>/",
    "results/runs/<int:run_id>/",
    "results/items/<int:item_id>/",
    "results/items/<int:item_id>/edit/",
    "results/runs/<int:run_id>/add-item/",
    "results/delete/",
    "results/restore/",
    "results/events/",
    "results/notifications/",
    "inbox/",
    "inbox/badge/",
    "inbox/entries/<uuid:entry_id>/",
    "inbox/entries/<uuid:entry_id>/read/",
    "inbox/entries/<uuid:entry_id>/reply/",
    "inbox/sidebar/",
    "inbox/workspaces/",
    "inbox/workspaces/<int:workspace_id>/",
    "inbox/workspaces/<int:workspace_id>/tokens/",
    "inbox/workspaces/<int:workspace_id>/tokens/<int:token_id>/revoke/",
    "setup/",
    "setup/skip/",
    "setup/reopen/",
    "setup/finish/",
    "setup/<slug:step>/",
    "settings/mcp/",
    "settings/mcp/<int:token_id>/revoke/",
    "settings/",
    "settings/models/",
    "settings/models/test/",
    "settings/models/local/",
    "settings/models/<int:config_id>/",
    "settings/models/<int:config_id>/test/",
    "settings/models/<int:config_id>/delete/",
    "settings/directors/",
    "settings/directors/add/",
    "settings/directors/<int:director_id>/",
    "settings/directors/<int:director_id>/delete/",
    "settings/directors/<int:director_id>/agents/",
    "settings/directors/<int:director_id>/agents/order/",
    "settings/agents/<int:agent_id>/",
    "settings/agents/<int:agent_id>/delete/",
    "settings/filters/",
    "settings/filters/order/",
    "settings/filters/<int:filter_id>/",
    "settings/filters/<int:filter_id>/toggle/",
    "settings/general/",
    "admin/ (Django admin)",
    "api/ (django-ninja, operations below)",
}

EXPECTED_API_OPERATIONS = {
    "GET /api/health",
    "GET /api/diagnostics/runtime",
    "GET /api/auth/whoami",
    "POST /api/auth/logout",
    "GET /api/conversations/byDirectorEmail",
    "GET /api/settings",
    "PUT /api/settings",
    "GET /api/directors",
    "POST /api/directors",
    "GET /api/directors/{director_id}",
    "PUT /api/directors/{director_id}",
    "DELETE /api/directors/{director_id}",
    "PUT /api/directors/{director_id}/agents/order",
    "GET /api/agents",
    "POST /api/agents",
    "GET /api/agents/{agent_id}",
    "PUT /api/agents/{agent_id}",
    "DELETE /api/agents/{agent_id}",
    "GET /api/prompts",
    "POST /api/prompts",
    "GET /api/prompts/{prompt_id}",
    "PUT /api/prompts/{prompt_id}",
    "DELETE /api/prompts/{prompt_id}",
    "GET /api/prompt-templates",
    "POST /api/prompt-templates",
    "GET /api/prompt-templates/{prompt_id}",
    "PUT /api/prompt-templates/{prompt_id}",
    "DELETE /api/prompt-templates/{prompt_id}",
    "GET /api/memory",
    "POST /api/memory",
    "GET /api/memory/{memory_id}",
    "PUT /api/memory/{memory_id}",
    "DELETE /api/memory/{memory_id}",
    "GET /api/accounts",
    "GET /api/accounts/{account_id}",
    "GET /api/accounts/{account_id}/test",
    "GET /api/accounts/{account_id}/gmail-test",
    "GET /api/accounts/{account_id}/outlook-test",
    "GET /api/search",
    "GET /api/search/saved",
    "POST /api/search/saved",
    "GET /api/search/saved/{saved_search_id}",
    "PATCH /api/search/saved/{saved_search_id}",
    "DELETE /api/search/saved/{saved_search_id}",
    "GET /api/mail/tags",
    "GET /api/mail/messages/{message_id}/tags",
    "POST /api/mail/messages/{message_id}/tags",
    "DELETE /api/mail/messages/{message_id}/tags",
    "GET /api/mail/threads/{thread_id}/tags",
    "POST /api/mail/threads/{thread_id}/tags",
    "DELETE /api/mail/threads/{thread_id}/tags",
    "GET /api/filters",
    "POST /api/filters",
    "POST /api/filters/test",
    "GET /api/filters/{filter_id}",
    "PUT /api/filters/{filter_id}",
    "DELETE /api/filters/{filter_id}",
    "GET /api/fetcher/status",
    "POST /api/fetcher/start",
    "POST /api/fetcher/stop",
    "POST /api/fetcher/fetch",
    "POST /api/fetcher/run",
    "POST /api/ask",
    "GET /api/ask/{run_id}",
    "GET /api/workspaces/{workspace_id}/items",
    "POST /api/workspaces/{workspace_id}/items",
    "GET /api/workspaces/{workspace_id}/items/{item_id}",
    "PUT /api/workspaces/{workspace_id}/items/{item_id}",
    "DELETE /api/workspaces/{workspace_id}/items/{item_id}",
    "GET /api/diagnostics/unified",
    "GET /api/diagnostics/unified/{node_id}",
    "POST /api/diagnostics/unified/delete",
    "DELETE /api/diagnostics/unified/{node_id}",
    "GET /api/inbox/conversations",
    "POST /api/inbox/conversations",
    "GET /api/inbox/conversations/{conversation_id}",
    "POST /api/inbox/conversations/{conversation_id}/messages",
    "POST /api/inbox/conversations/{conversation_id}/archive",
    "GET /api/inbox/suggestions",
    "POST /api/inbox/suggestions/{suggestion_id}/respond",
    "POST /api/inbox/organize",
    "GET /api/settings/organization",
    "PUT /api/settings/organization",
    "POST /api/organization/moves/{move_id}/undo",
    "POST /api/organization/upload",
    "GET /api/inbox/history",
    "POST /api/inbox/entries/{entry_id}/read",
    "POST /api/inbox/entries/{entry_id}/reply",
    "DELETE /api/inbox/entries/{entry_id}",
    "POST /api/inbox/seed",
}

EXPECTED_WEBSOCKET_ROUTES = {"ws/notifications/", "ws/ask/<uuid:run_id>/"}

# Named in full so the inventory cannot silently lose the admin or the API mount.
COLLAPSED_PREFIXES = {"admin/": "admin/ (Django admin)", "api/": "api/ (django-ninja, operations below)"}


def iter_url_patterns(patterns: Iterable[Any], prefix: str = "") -> Iterator[str]:
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if route in COLLAPSED_PREFIXES:
                yield COLLAPSED_PREFIXES[route]
                continue
            yield from iter_url_patterns(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield route


def api_operations() -> set[str]:
    schema = api.get_openapi_schema()
    return {
        f"{method.upper()} {path.rstrip('/') or path}"
        for path, operations in schema["paths"].items()
        for method in operations
    }


def websocket_patterns() -> list[Any]:
    from mailagent.asgi import websocket_urlpatterns

    return list(websocket_urlpatterns)


def test_url_patterns_match_the_inventory() -> None:
    found = set(iter_url_patterns(get_resolver().url_patterns))
    assert found - EXPECTED_URL_PATTERNS == set(), "routes not in the inventory"
    assert EXPECTED_URL_PATTERNS - found == set(), "routes missing from mailagent/urls.py"


def test_api_operations_match_the_inventory() -> None:
    found = api_operations()
    assert found - EXPECTED_API_OPERATIONS == set(), "API operations not in the inventory"
    assert EXPECTED_API_OPERATIONS - found == set(), "API operations missing from the mounted API"


def test_websocket_routes_match_the_inventory() -> None:
    assert {str(entry.pattern) for entry in websocket_patterns()} == EXPECTED_WEBSOCKET_ROUTES


def test_unknown_api_paths_answer_json_404_to_a_logged_in_user(logged_in_client: Client, client: Client) -> None:
    for path in ["/api/nope", "/api/account", "/api/accounts/1/nope", "/api/filters/1/extra/deep"]:
        response = logged_in_client.get(path)
        assert response.status_code == 404, path
        assert response["Content-Type"].startswith("application/json"), path
        assert set(response.json()) == {"error"}, path


def test_anonymous_api_calls_still_answer_401_before_resolution(user: Any) -> None:
    anonymous = Client()
    for path in ["/api/nope", "/api/accounts/1/test"]:
        response = anonymous.get(path)
        assert response.status_code == 401, path
        assert response.json() == {"error": "Authentication required"}


# --- the walk -------------------------------------------------------------------------------------------

LINK_ATTRIBUTES = {"href", "hx-get", "hx-post", "hx-put", "hx-patch", "hx-delete", "action", "ws-connect", "src"}
FOLLOWED_ATTRIBUTES = {"href", "hx-get"}
# Pages the walk does not follow: leaving the session, Django's own admin, file downloads (resolved, not
# fetched), static files.
NOT_FOLLOWED_PREFIXES = ("/accounts/logout/", "/admin/", "/static/", "/api/docs")
MAX_VISITS_PER_VIEW = 3


class LinkCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in LINK_ATTRIBUTES and value is not None:
                self.links.append((name, value))


def links_in(html: str) -> list[tuple[str, str]]:
    collector = LinkCollector()
    collector.feed(html)
    return collector.links


def is_internal(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in {"mailto", "tel", "data", "javascript"}:
        return False
    return parts.netloc in {"", "testserver"}


def resolves_websocket(path: str) -> bool:
    stripped = path.lstrip("/")
    return any(entry.pattern.match(stripped) for entry in websocket_patterns())


def check_resolves(attribute: str, url: str, page: str, problems: list[str]) -> str | None:
    """The path of an internal link (or None for external/fragment links), recording what does not resolve."""
    if not url or url.startswith("#") or not is_internal(url):
        return None
    path = urlsplit(urljoin(page, url)).path
    if attribute == "ws-connect":
        if not resolves_websocket(path):
            problems.append(f"{page}: {attribute}={url!r} matches no websocket route")
        return None
    if path.startswith("/" + settings.STATIC_URL.strip("/") + "/"):
        from django.contrib.staticfiles import finders

        if not finders.find(path.split("/", 2)[2]):
            problems.append(f"{page}: {attribute}={url!r} is not a static file")
        return None
    try:
        resolve(path)
    except Resolver404:
        problems.append(f"{page}: {attribute}={url!r} resolves to nothing")
        return None
    return path


@pytest.fixture
def world(staff_user: Any) -> dict[str, Any]:
    """Real objects of every kind the pages show, made through the actions the product uses."""
    import io

    import_demo_mailbox(owner=staff_user, stdout=io.StringIO())
    demo = MailAccount.objects.get(owner=staff_user, name=DEMO_ACCOUNT_NAME)
    imap = create_imap_account(
        owner=staff_user,
        name="Work",
        address="me@work.example",
        host="127.0.0.1",
        port=1,
        security="ssl",
        username="me",
        password="s3cret",
    )
    director = create_director(owner=staff_user, name="Clients")
    create_filter(director=director, field_name="subject", regex_text="invoice")
    model = create_api_config(owner=staff_user, name="Local", base_url="http://127.0.0.1:1/v1", api_key="k", model="m")
    create_agent(director=director, name="Psychologist", slug="psychologist", api_config=model)
    message = Message.objects.filter(account=demo).order_by("pk").first()
    assert message is not None
    create_runs(requests=[RunRequest(message_id=message.pk, director_id=director.pk)], fetch_cycle_id=None)
    create_prompt(owner=staff_user, name="Support", messages=[("system", "Answer {{email.from}} politely.")])
    # A calendar invitation waiting for approval (run page card, Inbox entry, approval page).
    (run,) = Run.objects.filter(director=director)
    request_calendar_approval(
        run=run,
        workspace=open_workspace(
            owner=staff_user, run_id=run.pk, message_id=message.pk, director_id=director.pk, director_name="Clients",
            title="Invoice",
        ),
        account=demo,
        request={"method": "POST", "api": "graph", "path": "/me/events", "params": {}, "json": {"subject": "Call"}},
        attendees=["client@example.com"],
    )  # fmt: skip
    Memory.objects.create(owner=staff_user, director=director, content="The client prefers mornings.")
    create_ask_run(owner=staff_user, question="When is the statement due?")
    workspace = create_user_workspace(owner=staff_user, label="Claude Desktop")
    add_item(workspace=workspace, data="# Notes\n", label="notes", mime_type="text/markdown", path="notes.md")
    push_inbox_entry(workspace=workspace, docs=[{"path": "notes.md"}], comments="Summary of the week.")
    # A reply draft from a run's item (the Drafts page, its editor and confirmation page).
    run_workspace = open_workspace(
        owner=staff_user, run_id=None, message_id=message.pk, director_id=None, director_name="Clients", title="x"
    )
    create_draft_from_item(owner=staff_user, item=add_item(workspace=run_workspace, data="Thanks, noted."))
    # An organize-agent suggestion: its card links the agent transcript page.
    library_file = LibraryFile.objects.create(library=get_library(owner=staff_user), path="inbox/p.txt", sha256="0")
    Suggestion.objects.create(
        file=library_file, target_folder="finance", file_sha256="0" * 64, source="llm",
        transcript=[{"role": "user", "content": "Suggest a folder for inbox/p.txt."}],
    )  # fmt: skip
    # An attachment whose cached copy is gone and whose archive keeps none: its download explains the error.
    attachment = Attachment.objects.filter(message__account=demo).order_by("pk").first()
    assert attachment is not None
    fetch_attachment_bytes(attachment=attachment)
    attachment.refresh_from_db()
    (Path(settings.ATTACHMENT_CACHE_DIR) / attachment.cache_path).unlink()
    return {"demo": demo, "imap": imap, "attachment": attachment}


def page_templates() -> set[str]:
    root = REPO_ROOT / "templates"
    return {str(path.relative_to(root)) for path in root.glob("*/pages/*.html")}


def test_every_link_in_every_page_resolves(client: Client, staff_user: Any, world: dict[str, Any]) -> None:
    client.force_login(staff_user)
    problems: list[str] = []
    rendered: set[str] = set()
    seen: set[str] = set()
    visits_per_view: dict[str, int] = {}
    broken_download = reverse_attachment(world["attachment"])
    queue = ["/", broken_download]
    while queue:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        view = resolve(urlsplit(url).path).view_name
        if visits_per_view.get(view, 0) >= MAX_VISITS_PER_VIEW:
            continue
        visits_per_view[view] = visits_per_view.get(view, 0) + 1
        response = client.get(url)
        # The download whose copy is gone answers 502 with a page that says so; nothing else may fail.
        assert response.status_code < 500 or (url, response.status_code) == (broken_download, 502), url
        rendered.update(template.name for template in response.templates if template.name)
        if not response["Content-Type"].startswith("text/html"):
            continue
        for attribute, link in links_in(response.content.decode()):
            path = check_resolves(attribute, link, url, problems)
            if path is None or attribute not in FOLLOWED_ATTRIBUTES or path.startswith(NOT_FOLLOWED_PREFIXES):
                continue
            target = urljoin(url, link).split("#", 1)[0]
            parts = urlsplit(target)
            queue.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    assert problems == []
    missing = page_templates() - rendered
    assert missing == set(), f"page templates the walk never rendered: {sorted(missing)}"


def reverse_attachment(attachment: Attachment) -> str:
    from django.urls import reverse

    return reverse("mail:attachment_download", args=[attachment.pk])


JS_URL = re.compile(r"""["'`](/(?:api|ws|mail|runs|ask|search|routing|accounts|admin)/[^"'`\s]*)""")


def test_urls_in_static_javascript_resolve() -> None:
    problems: list[str] = []
    for script in sorted((REPO_ROOT / "static").rglob("*.js")):
        for match in JS_URL.finditer(script.read_text()):
            # Template-literal placeholders (`${id}`) stand for one path segment.
            url = re.sub(r"\$\{[^}]*\}", "1", match.group(1))
            attribute = "ws-connect" if url.startswith("/ws/") else "src"
            check_resolves(attribute, url, "/", problems)
    assert problems == []


def test_connection_test_button_reaches_the_mounted_api(client: Client, staff_user: Any) -> None:
    """The account page's "Test connection" button calls the API the project mounts (it answered 404)."""
    account = create_imap_account(
        owner=staff_user,
        name="Work",
        address="me@work.example",
        host="127.0.0.1",
        port=1,
        security="ssl",
        username="me",
        password="s3cret",
    )
    client.force_login(staff_user)
    page = client.get(f"/mail/accounts/{account.pk}/").content.decode()
    (button,) = [link for attribute, link in links_in(page) if attribute == "hx-get" and "/test" in link]
    response = client.get(button)
    assert response.status_code == 200
    assert response.json()["ok"] is False and response.json()["error"] in {"network", "auth", "other"}


@pytest.mark.parametrize("debug", [True, False])
def test_a_post_to_a_path_missing_its_slash_is_redirected_with_its_method(
    logged_in_client: Client, settings: Any, debug: bool
) -> None:
    """POST /mail (no slash) was a 500 under DEBUG (Django's APPEND_SLASH RuntimeError) and a 301 that turns
    the POST into a GET without it; 308 makes the client repeat the POST at /mail/."""
    settings.DEBUG = debug
    response = logged_in_client.post("/mail", {"q": "x"})
    assert response.status_code == 308
    assert response["Location"] == "/mail/"
    assert logged_in_client.get("/mail").status_code == 301
