"""The security surface: truthful labels about secrets, secrets write-only everywhere, refusing plaintext in
production, pages that survive a missing key."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from apps.accounts.actions import create_imap_account
from apps.accounts.models import MailAccount
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.llm.models import ApiConfig
from apps.orchestration.models import Conversation, Director, OrchLog, Phase, ProviderEvent, Run
from apps.routing.models import Filter
from mailagent.crypto import (
    ENCRYPTED_LABEL,
    KEY_MISSING_LABEL,
    PLAINTEXT_LABEL,
    SecretDecryptionError,
    generate_key,
    reveal,
)
from tests.conftest import USER_PASSWORD
from tests.fakes.dovecot import make_message
from tests.services import REPO_ROOT

pytestmark = pytest.mark.django_db

KEY_A = generate_key()
KEY_B = generate_key()
IMAP_PASSWORD = "hunter2-canary-7d1f"
API_KEY = "sk-canary-5be0c2a9"


def raw_column(table: str, column: str, pk: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM {table} WHERE id = %s", [pk])  # noqa: S608
        return str(cursor.fetchone()[0])


def imap_account(owner: Any) -> MailAccount:
    return create_imap_account(
        owner=owner,
        name="Work",
        address="me@work.example",
        host="127.0.0.1",
        port=1,
        security="ssl",
        username="me",
        password=IMAP_PASSWORD,
    )


def api_config(owner: Any) -> ApiConfig:
    return ApiConfig.objects.create(
        owner=owner, name="main", base_url="http://127.0.0.1:9/v1", api_key=API_KEY, model="fake-model"
    )


# --- truthful labels ------------------------------------------------------------------------------------


def test_without_a_key_the_labels_say_plaintext(staff_client: Client, staff_user: Any, settings: Any) -> None:
    settings.VX_MAILAGENT_KEY = ""
    form_page = staff_client.get("/mail/accounts/").content.decode()
    assert "stored encrypted" not in form_page
    assert f"The password will be {PLAINTEXT_LABEL}" in form_page
    account = imap_account(staff_user)
    assert IMAP_PASSWORD in raw_column("mail_mailaccount", "credentials", account.pk)
    detail = staff_client.get(f"/mail/accounts/{account.pk}/").content.decode()
    assert "encrypted" not in detail
    assert f'data-state="plaintext">{PLAINTEXT_LABEL}<' in detail
    admin_list = staff_client.get("/admin/mail/mailaccount/").content.decode()
    assert PLAINTEXT_LABEL in admin_list and IMAP_PASSWORD not in admin_list


def test_with_a_key_the_labels_say_encrypted_and_the_database_agrees(
    staff_client: Client, staff_user: Any, settings: Any
) -> None:
    settings.VX_MAILAGENT_KEY = KEY_A
    assert f"The password will be {ENCRYPTED_LABEL}" in staff_client.get("/mail/accounts/").content.decode()
    account = imap_account(staff_user)
    assert raw_column("mail_mailaccount", "credentials", account.pk).startswith("enc1:")
    detail = staff_client.get(f"/mail/accounts/{account.pk}/").content.decode()
    assert f'data-state="encrypted">{ENCRYPTED_LABEL}<' in detail
    assert IMAP_PASSWORD not in detail


def test_plaintext_written_before_the_key_is_labelled_plaintext_until_reencrypted(
    staff_client: Client, staff_user: Any, settings: Any
) -> None:
    settings.VX_MAILAGENT_KEY = ""
    account = imap_account(staff_user)
    settings.VX_MAILAGENT_KEY = KEY_A
    detail = staff_client.get(f"/mail/accounts/{account.pk}/").content.decode()
    assert "stored in plaintext — run manage.py reencrypt_secrets" in detail


# --- write-only -----------------------------------------------------------------------------------------


def test_the_admin_never_shows_an_api_key_and_a_blank_field_keeps_it(
    staff_client: Client, staff_user: Any, settings: Any
) -> None:
    config = api_config(staff_user)
    url = f"/admin/llm/apiconfig/{config.pk}/change/"
    page = staff_client.get(url).content.decode()
    assert API_KEY not in page
    assert 'type="password" name="api_key"' in page and f"Currently {ENCRYPTED_LABEL}" in page
    form = {
        "owner": staff_user.pk,
        "name": "renamed",
        "base_url": config.base_url,
        "api_key": "",
        "model": config.model,
        "max_concurrency": config.max_concurrency,
        "timeout_seconds": config.timeout_seconds,
        "max_retries": config.max_retries,
        "tool_call_mode": config.tool_call_mode,
    }
    form.update({k: v for k, v in admin_form_defaults(staff_client, url).items() if k not in form})
    response = staff_client.post(url, form)
    assert response.status_code == 302, response.context["adminform"].form.errors
    config.refresh_from_db()
    assert config.name == "renamed" and config.api_key == API_KEY
    form["api_key"] = "sk-new-key"
    assert staff_client.post(url, form).status_code == 302
    config.refresh_from_db()
    assert config.api_key == "sk-new-key"
    assert "sk-new-key" not in staff_client.get(url).content.decode()


def admin_form_defaults(client: Client, url: str) -> dict[str, str]:
    """The other inputs of an admin change form as the browser would submit them."""
    from html.parser import HTMLParser

    values: dict[str, str] = {}

    class Inputs(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            data = dict(attrs)
            name = data.get("name")
            if tag == "input" and name and data.get("type") not in {"submit", "password", "checkbox"}:
                values[name] = data.get("value") or ""
            if tag == "input" and name and data.get("type") == "checkbox" and "checked" in data:
                values[name] = "on"

    Inputs().feed(client.get(url).content.decode())
    values.pop("csrfmiddlewaretoken", None)
    return values


def test_account_pages_and_admin_never_show_credentials(staff_client: Client, staff_user: Any) -> None:
    account = imap_account(staff_user)
    for url in [
        "/mail/accounts/",
        f"/mail/accounts/{account.pk}/",
        "/admin/mail/mailaccount/",
        f"/admin/mail/mailaccount/{account.pk}/change/",
    ]:
        response = staff_client.get(url)
        assert response.status_code == 200, url
        assert IMAP_PASSWORD not in response.content.decode(), url


def test_secrets_never_appear_in_api_responses(staff_client: Client, staff_user: Any) -> None:
    from mailagent.api import api

    account = imap_account(staff_user)
    api_config(staff_user)
    schema = api.get_openapi_schema()
    for path, operations in schema["paths"].items():
        if "get" not in operations or "{" in path:
            continue
        body = staff_client.get(path).content.decode()
        assert IMAP_PASSWORD not in body and API_KEY not in body, path
    body = staff_client.get(f"/api/accounts/{account.pk}/test").content.decode()
    assert IMAP_PASSWORD not in body


# --- a key that is gone ---------------------------------------------------------------------------------


@pytest.fixture
def secrets_under_key_a(staff_user: Any, settings: Any) -> dict[str, Any]:
    settings.VX_MAILAGENT_KEY = KEY_A
    account = imap_account(staff_user)
    config = api_config(staff_user)
    director = Director.objects.create(owner=staff_user, name="d", api_config=config)
    stored = store_remote_messages(
        account=account,
        messages=[RemoteMessage(provider_id="1", raw=make_message(subject="s", body="b"), folder="INBOX")],
    )
    run = Run.objects.create(director=director, message_id=stored.created_ids[0])
    thread = Conversation.objects.create(run=run, kind="director", director=director)
    event = ProviderEvent.objects.create(run=run, thread=thread, kind="request", payload={"messages": ["hi"]})
    log = OrchLog.objects.create(run=run, director=director, phase=Phase.DIRECTOR, detail={"a": 1}, result={"b": 2})
    settings.VX_MAILAGENT_KEY = KEY_B  # started with another key: everything above is undecryptable
    return {"account": account, "config": config, "event": event, "log": log, "run": run}


def test_pages_survive_a_missing_key_and_say_why(staff_client: Client, secrets_under_key_a: dict[str, Any]) -> None:
    s = secrets_under_key_a
    pages = [
        "/mail/accounts/",
        f"/mail/accounts/{s['account'].pk}/",
        "/admin/mail/mailaccount/",
        f"/admin/mail/mailaccount/{s['account'].pk}/change/",
        "/admin/llm/apiconfig/",
        f"/admin/llm/apiconfig/{s['config'].pk}/change/",
        "/admin/orchestration/providerevent/",
        f"/admin/orchestration/providerevent/{s['event'].pk}/change/",
        "/admin/orchestration/orchlog/",
        f"/admin/orchestration/orchlog/{s['log'].pk}/change/",
        "/runs/",
        f"/runs/{s['run'].pk}/",
        "/runs/diagnostics/",
    ]
    for url in pages:
        response = staff_client.get(url)
        assert response.status_code == 200, url
    assert KEY_MISSING_LABEL in staff_client.get(f"/mail/accounts/{s['account'].pk}/").content.decode()
    assert KEY_MISSING_LABEL in staff_client.get("/admin/mail/mailaccount/").content.decode()
    config_page = staff_client.get(f"/admin/llm/apiconfig/{s['config'].pk}/change/").content.decode()
    assert f"Currently {KEY_MISSING_LABEL}" in config_page
    event_page = staff_client.get(f"/admin/orchestration/providerevent/{s['event'].pk}/change/").content.decode()
    assert KEY_MISSING_LABEL in event_page
    # Settings → Models says what the admin says, never "stored encrypted" for a key this server cannot read.
    settings_page = staff_client.get(f"/settings/models/{s['config'].pk}/").content.decode()
    assert f"The stored key {KEY_MISSING_LABEL}: this server cannot use it" in settings_page
    assert ENCRYPTED_LABEL not in settings_page and "stored encrypted" not in settings_page.lower()


def test_saving_a_row_with_an_undecryptable_secret_keeps_the_ciphertext(
    secrets_under_key_a: dict[str, Any], settings: Any
) -> None:
    account = MailAccount.objects.get(pk=secrets_under_key_a["account"].pk)
    before = raw_column("mail_mailaccount", "credentials", account.pk)
    account.name = "renamed"
    account.save()
    assert raw_column("mail_mailaccount", "credentials", account.pk) == before
    with pytest.raises(SecretDecryptionError, match="not among the configured"):
        reveal(account.credentials)
    settings.VX_MAILAGENT_KEY = f"{KEY_B},{KEY_A}"  # the old key is back: nothing was lost
    assert MailAccount.objects.get(pk=account.pk).credentials == {"password": IMAP_PASSWORD}


# --- refusing plaintext in production -------------------------------------------------------------------


def run_check(**env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in {"VX_MAILAGENT_KEY", "DEBUG", "MAILAGENT_TESTING"}}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO_ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_debug_off_without_a_key_refuses_to_start() -> None:
    refused = run_check(DEBUG="0")
    assert refused.returncode != 0
    assert "mailagent.E002" in refused.stderr and "MAILAGENT_ALLOW_PLAINTEXT=1" in refused.stderr
    invalid = run_check(DEBUG="0", VX_MAILAGENT_KEY="not-a-key")
    assert invalid.returncode != 0 and "not 64 hexadecimal characters" in invalid.stderr
    assert run_check(DEBUG="0", MAILAGENT_ALLOW_PLAINTEXT="1").returncode == 0
    assert run_check(DEBUG="1").returncode == 0  # development keeps the plaintext-with-warning default
    assert run_check(DEBUG="0", VX_MAILAGENT_KEY=KEY_A).returncode == 0


def test_the_asgi_application_refuses_to_load_without_a_key() -> None:
    base = {k: v for k, v in os.environ.items() if k not in {"VX_MAILAGENT_KEY", "DEBUG", "MAILAGENT_TESTING"}}
    result = subprocess.run(
        [sys.executable, "-c", "import mailagent.asgi"],
        cwd=REPO_ROOT,
        env={**base, "DEBUG": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "Refusing to run with DEBUG off" in result.stderr


# --- bad input is the client's error, in the API's one error shape -------------------------------------


@pytest.fixture
def director_of(user: Any) -> Director:
    from apps.orchestration.actions import create_director

    return create_director(owner=user, name="Clients")


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("order", [-1, 2**63, 2**31])
def test_filter_order_out_of_range_is_422_json(
    logged_in_client: Client, director_of: Director, settings: Any, debug: bool, order: int
) -> None:
    settings.DEBUG = debug
    body = {"directorId": director_of.pk, "field": "subject", "regex": "x", "order": order}
    response = logged_in_client.post("/api/filters", body, content_type="application/json")
    assert response.status_code == 422
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert "order" in response.json()["error"]
    created = logged_in_client.post("/api/filters", {**body, "order": 3}, content_type="application/json")
    assert created.status_code == 201
    patch = logged_in_client.put(
        f"/api/filters/{created.json()['id']}", {"order": order}, content_type="application/json"
    )
    assert patch.status_code == 422 and "error" in patch.json()


@pytest.mark.parametrize("debug", [False, True])
def test_nul_characters_are_refused_with_the_field_named_on_every_database(
    logged_in_client: Client, director_of: Director, settings: Any, debug: bool
) -> None:
    # SQLite stores U+0000, PostgreSQL cannot: both refuse it the same way, before anything is written.
    settings.DEBUG = debug
    body = {"directorId": director_of.pk, "field": "subject", "regex": "in\x00voice", "description": "ok"}
    response = logged_in_client.post("/api/filters", body, content_type="application/json")
    assert response.status_code == 422, response.content
    assert response.json()["error"] == (
        "Invalid input: body.regex: text cannot contain the NUL character (U+0000); remove it, or send binary "
        "content base64-encoded"
    )
    key = logged_in_client.post("/api/filters", {**body, "regex": "x", "n\x00te": 1}, content_type="application/json")
    assert key.status_code == 422 and "body.n\\u0000te" in key.json()["error"]
    query = logged_in_client.get("/api/search", {"q": "in\x00voice"})
    assert query.status_code == 422 and query.json()["error"].startswith("Invalid input: query.q: text cannot")
    assert not Filter.objects.exists()
    created = logged_in_client.post("/api/filters", {**body, "regex": "invoice"}, content_type="application/json")
    assert created.status_code == 201


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("path", ["/api/filters", "/api/filters/test", "/api/fetcher/start", "/api/fetcher/fetch"])
def test_multipart_without_a_boundary_is_400_json(user: Any, settings: Any, debug: bool, path: str) -> None:
    settings.DEBUG = debug
    browser = Client(enforce_csrf_checks=True)  # the CSRF check is what read the body (as in production)
    browser.force_login(user)
    response = browser.generic("POST", path, b"--x\r\n\r\n", content_type="multipart/form-data")
    assert response.status_code == 400
    assert response.json() == {"error": "Malformed multipart body: Invalid boundary in multipart: None"}


def test_multipart_without_a_boundary_on_a_page_is_400(user: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    for path in ["/settings/filters/", "/accounts/login/", "/mail/accounts/import/"]:
        response = browser.generic("POST", path, b"--x", content_type="multipart/form-data")
        assert response.status_code == 400, path
        assert b"Malformed multipart body" in response.content


@pytest.mark.parametrize("debug", [False, True])
def test_huge_ids_are_4xx_json(logged_in_client: Client, settings: Any, debug: bool) -> None:
    settings.DEBUG = debug
    for path in [f"/api/filters/{2**63}", f"/api/accounts/{2**63}/test", f"/api/filters/{2**64}"]:
        response = logged_in_client.get(path)
        assert 400 <= response.status_code < 500, path
        assert "error" in response.json(), path


@pytest.mark.parametrize("debug", [False, True])
def test_api_errors_are_json_with_one_shape(logged_in_client: Client, settings: Any, debug: bool) -> None:
    settings.DEBUG = debug
    answers = [
        logged_in_client.get("/api/nope"),
        logged_in_client.get("/api/filters/999999"),
        logged_in_client.post("/api/filters", "{not json", content_type="application/json"),
        logged_in_client.post("/api/filters", {"field": "subject"}, content_type="application/json"),
        logged_in_client.get("/api/diagnostics/runtime"),
        Client().get("/api/filters"),
    ]
    for response in answers:
        assert response.status_code >= 400
        assert response["Content-Type"].startswith("application/json"), response.content[:200]
        assert isinstance(response.json()["error"], str) and response.json()["error"]
        assert "detail" not in response.json()


def test_csrf_failures_on_the_api_are_json(user: Any) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    response = strict.post("/api/fetcher/stop")
    assert response.status_code == 403
    assert "error" in response.json()


def test_the_openapi_schema_declares_the_error_shape() -> None:
    from mailagent.api import api

    schema = api.get_openapi_schema()
    assert schema["components"]["schemas"]["Error"]["required"] == ["error"]
    post_filters = schema["paths"]["/api/filters"]["post"]["responses"]
    assert {"400", "401", "403", "422"} <= set(post_filters)
    get_filter = schema["paths"]["/api/filters/{filter_id}"]["get"]["responses"]
    assert {"401", "404", "422"} <= set(get_filter)
    assert "401" not in schema["paths"]["/api/health"]["get"]["responses"]


async def test_unknown_websocket_paths_are_refused_cleanly(close_sync_thread_connections: Any) -> None:
    from channels.testing import WebsocketCommunicator

    from mailagent.asgi import application

    for path in ["/ws/nope/", "/ws/ask/not-a-uuid/", "/anything"]:
        communicator = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://localhost")])
        connected, _ = await communicator.connect()
        assert connected is False
        await communicator.disconnect()


# --- login throttling -----------------------------------------------------------------------------------


def test_the_admin_login_goes_through_the_throttled_app_login(staff_user: Any) -> None:
    from django.core.cache import cache

    cache.clear()
    browser = Client()
    for _ in range(30):
        response = browser.post("/admin/login/", {"username": "staff", "password": "wrong"})
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    # The admin's own form never checks a password, not even the right one.
    response = browser.post("/admin/login/", {"username": "staff", "password": USER_PASSWORD})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert browser.get("/admin/").status_code == 302
    # The app's login is rate limited: after the allowed failures even the right password is refused.
    for _ in range(6):
        browser.post("/accounts/login/", {"login": staff_user.email, "password": "wrong"})
    refused = browser.post("/accounts/login/", {"login": staff_user.email, "password": USER_PASSWORD})
    assert refused.status_code == 200 and "Too many failed login attempts" in refused.content.decode()
    assert browser.get("/admin/").status_code == 302
    cache.clear()
    signed_in = browser.post("/accounts/login/?next=/admin/", {"login": staff_user.email, "password": USER_PASSWORD})
    assert signed_in.status_code == 302
    assert browser.get("/admin/").status_code == 200


# --- static files with DEBUG off ------------------------------------------------------------------------

STATIC_PROBE = """
from django.test import Client
from django.test.utils import setup_test_environment
import re
setup_test_environment()
client = Client()
page = client.get("/accounts/login/", secure=True, HTTP_HOST="mail.example.com")
css = re.search(r'href="(/static/[^"]+\\.css)"', page.content.decode()).group(1)
asset = client.get(css, secure=True, HTTP_HOST="mail.example.com")
print(page.status_code, asset.status_code, css)
"""


def production_env(tmp_path: Any) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in {"MAILAGENT_TESTING", "DEBUG", "SECURE_SSL_REDIRECT"}}
    return {**base, "DEBUG": "0", "DATA_DIR": str(tmp_path), "ALLOWED_HOSTS": "mail.example.com"}


def test_debug_off_pages_and_styles_work_without_collectstatic(tmp_path: Any) -> None:
    env = production_env(tmp_path)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO_ROOT, env=env, check=True, timeout=300)
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v0", "-c", STATIC_PROBE],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    page_status, asset_status, css = result.stdout.split()
    assert (page_status, asset_status) == ("200", "200"), css
    # Once collected (serve does it when the manifest is missing), the hashed, compressed copies are used.
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=REPO_ROOT, env=env, check=True
    )
    collected = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v0", "-c", STATIC_PROBE],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    page_status, asset_status, css = collected.stdout.split()
    assert (page_status, asset_status) == ("200", "200") and re.search(r"app\.[0-9a-f]{12}\.css$", css), css


# --- Content-Security-Policy ----------------------------------------------------------------------------

CSP_PAGES = [
    "/",
    "/mail/",
    "/mail/accounts/",
    "/search/?q=invoice",
    "/settings/filters/",
    "/routing/fetcher/",
    "/runs/",
    "/runs/memory/",
    "/ask/",
    "/inbox/",
    "/runs/diagnostics/",
    "/admin/",
    "/admin/llm/apiconfig/add/",
    "/api/docs",
]


def test_every_page_carries_a_content_security_policy(staff_client: Client) -> None:
    anonymous = Client()
    for url in [*CSP_PAGES, "/accounts/login/", "/api/health"]:
        response = (anonymous if url == "/accounts/login/" else staff_client).get(url)
        assert response.status_code == 200, url
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-eval" not in policy and "frame-ancestors 'none'" in policy, url
        assert "'unsafe-inline'" not in policy.split("style-src-attr")[0], url
        body = response.content.decode()
        assert " onsubmit=" not in body and " onkeydown=" not in body and "hx-on" not in body, url
        assert "https://" not in "".join(re.findall(r"<(?:script|link)[^>]*>", body)), url  # nothing from a CDN
        for script in re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", body):
            assert "nonce=" in script or 'type="application/json"' in script, (url, script)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pages_work_in_chromium_under_the_policy(asgi_server: str, staff_user: Any) -> None:
    from tests.browser import CHROMIUM_ARGS
    from tests.services import find_executable, missing_service

    executable = find_executable("chromium")
    if executable is None:
        missing_service("Debian chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    account = imap_account(staff_user)
    violations: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on(
                "console",
                lambda message: (
                    violations.append(f"{page.url}: {message.text}")
                    if "Content Security Policy" in message.text or "Refused to" in message.text
                    else None
                ),
            )
            page.goto(f"{asgi_server}/accounts/login/")
            page.fill("input[name=login]", staff_user.email)
            page.fill("input[name=password]", USER_PASSWORD)
            page.click("form button[type=submit]")
            page.wait_for_url(f"{asgi_server}/")
            for url in CSP_PAGES:
                page.goto(f"{asgi_server}{url}")
                page.wait_for_load_state("networkidle")
            # htmx and app.js still work: "Test connection" asks the API and shows the answer as a badge.
            page.goto(f"{asgi_server}/mail/accounts/{account.pk}/")
            page.click("[data-connection-test]")
            page.wait_for_selector(f"#connection-result-{account.pk} .badge.error", timeout=30000)
            # Not only "Failed: Network": the cause, in the words a failed sync records.
            detail = page.inner_text(f"#connection-result-{account.pk} .connection-detail").strip()
            # The search box searches as you type (an hx-get swapping results in).
            page.goto(f"{asgi_server}/search/")
            page.fill("input[type=search]", "invoice")
            page.wait_for_selector("#search-results *", timeout=30000)
            assert page.evaluate("htmx.config.allowEval") is False
        finally:
            browser.close()
    assert violations == []
    recorded = MailAccount.objects.get(pk=account.pk).last_error_message
    assert "127.0.0.1:1" in detail and detail == recorded[:500], (detail, recorded)
