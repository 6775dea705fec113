"""The first-run wizard through the real URLconf: resumes from the data, creates a working director from a
template, skips and reopens; and the whole path in Chromium against the fake OpenAI server."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.urls import reverse

from apps.accounts.actions import create_local_account
from apps.accounts.demo_mailbox.generator import build_demo_messages
from apps.accounts.demo_mailbox.importing import write_demo_archive
from apps.accounts.models import Message
from apps.llm.models import ApiConfig
from apps.orchestration.models import Director, Run, RunStatus
from apps.routing.models import Filter
from apps.setup.selectors import setup_progress
from tests.fakes.openai_server import FakeOpenAI, Reply, system_text
from tests.services import free_port, qcluster


@pytest.mark.django_db
def test_the_wizard_resumes_where_the_data_says(logged_in_client: Any, user: Any, fake_llm: FakeOpenAI) -> None:
    assert logged_in_client.get(reverse("setup:index"))["Location"] == reverse("setup:step", args=["mailbox"])
    page = logged_in_client.get(reverse("setup:step", args=["mailbox"])).content.decode()
    assert reverse("mail:accounts") in page and "Import a file" in page
    create_local_account(owner=user, name="inbox", address="owner@example.com")
    assert logged_in_client.get(reverse("setup:index"))["Location"] == reverse("setup:step", args=["model"])
    response = logged_in_client.post(
        reverse("setup:step", args=["model"]),
        {
            "provider": "custom",
            "name": "Fake",
            "base_url": fake_llm.base_url,
            "api_key": "",
            "model": "fake-model",
            "timeout_seconds": 20,
            "max_retries": 1,
            "max_concurrency": 2,
            "input_cost_per_mtok": "0",
            "output_cost_per_mtok": "0",
        },
    )
    assert response["Location"] == reverse("setup:step", args=["director"])
    config = ApiConfig.objects.get(owner=user)
    response = logged_in_client.post(
        reverse("setup:step", args=["director"]),
        {"template": "client-support", "name": "Client support", "api_config": config.pk},
    )
    assert response["Location"] == reverse("setup:step", args=["filter"])
    director = Director.objects.get(owner=user)
    assert director.api_config == config and director.agents.count() == 2
    page = logged_in_client.get(reverse("setup:step", args=["filter"])).content.decode()
    assert r"client.*@domain\.com" in page  # the template's suggested pattern
    logged_in_client.post(
        reverse("setup:step", args=["filter"]),
        {"director": director.pk, "field": "from", "regex": r"client.*@domain\.com", "case_insensitive": "on"},
    )
    assert Filter.objects.filter(director=director).count() == 1
    progress = setup_progress(user=user)
    assert progress.next_step == "done" and progress.show
    logged_in_client.post(reverse("setup:finish"))
    assert not setup_progress(user=user).show
    page = logged_in_client.get(reverse("setup:step", args=["done"])).content.decode()
    assert "You're set up" in page and 'data-testid="results-link"' in page
    assert 'data-testid="try-thread-link"' not in page  # no mail yet: nothing to link to
    from apps.accounts.models import MailAccount
    from apps.accounts.providers.base import RemoteMessage
    from apps.accounts.store import store_remote_messages
    from tests.fakes.dovecot import make_message

    account = MailAccount.objects.get(owner=user)
    stored = store_remote_messages(
        account=account,
        messages=[RemoteMessage(provider_id="1", raw=make_message(subject="Order 1234 is late", body="b"))],
    )
    thread_id = Message.objects.get(pk=stored.created_ids[0]).thread_id
    page = logged_in_client.get(reverse("setup:step", args=["done"])).content.decode()
    assert f'href="{reverse("mail:thread", args=[thread_id])}" data-testid="try-thread-link">Order 1234 is late' in page


@pytest.mark.django_db
def test_a_template_director_and_its_agent_see_the_email(
    user: Any, fake_llm: FakeOpenAI, store_mail: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The client-support template's prompts say "email" and use other {{variables}} but not {{email}}: the run
    still gives the email to the director and to the psychologist it consults."""
    from apps.routing.manual_runs import run_director_on_message
    from apps.setup.actions import create_director_from_template
    from apps.setup.director_templates import CLIENT_SUPPORT

    config = ApiConfig.objects.create(owner=user, name="Fake", base_url=fake_llm.base_url, model="fake-model")
    director = create_director_from_template(owner=user, template=CLIENT_SUPPORT, name="Support", api_config=config)
    message = store_mail(subject="Desk arrived broken (order ER-48213)", sender="client1@domain.com")
    _script_director(fake_llm)
    with django_capture_on_commit_callbacks(execute=True):  # the run's task, synchronously in tests
        run_director_on_message(message=message, director=director)
    run = Run.objects.get(director=director)
    assert run.status == RunStatus.COMPLETED, (run.status, run.error)
    requests = fake_llm.chat_requests()
    director_first = next(body for body in requests if "You manage client support as Support" in system_text(body))
    psychologist = next(body for body in requests if "emotional state" in system_text(body))
    for body in (director_first, psychologist):
        assert "Desk arrived broken (order ER-48213)" in json.dumps(body["messages"], ensure_ascii=False)


@pytest.mark.django_db
def test_the_wizards_import_form_comes_back_to_the_wizard(
    logged_in_client: Any, user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.fakes.dovecot import make_message

    page = logged_in_client.get(reverse("setup:step", args=["mailbox"])).content.decode()
    assert 'data-testid="wizard-import-form"' in page and 'name="next" value="/setup/"' in page
    raw = make_message(subject="Hello", body="Hi.\n", sender="a@example.com", to="b@example.com", message_id="<w1@x>")

    def upload(next_url: str) -> Any:
        archive = SimpleUploadedFile("one.eml", raw, content_type="message/rfc822")
        data = {"file": archive, "new_account_name": "Imported", "next": next_url}
        with django_capture_on_commit_callbacks(execute=True):  # the import job, inline (django-q2 sync mode)
            return logged_in_client.post(reverse("mail:account_import"), data)

    response = upload("/setup/")
    assert response.status_code == 302 and response["Location"] == "/setup/"
    assert Message.objects.filter(account__owner=user, subject="Hello").count() == 1
    assert logged_in_client.get("/setup/")["Location"] == reverse("setup:step", args=["model"])
    # Another site is never a destination: the Accounts page instead.
    assert upload("https://evil.example/")["Location"] == reverse("mail:accounts")


@pytest.mark.django_db
def test_skip_and_reopen(logged_in_client: Any, user: Any) -> None:
    assert setup_progress(user=user).show
    assert logged_in_client.post(reverse("setup:skip"))["Location"] == reverse("home")
    assert not setup_progress(user=user).show
    page = logged_in_client.get(reverse("settings:index")).content.decode()
    assert "setup-reminder" not in page and reverse("setup:reopen") in page
    assert logged_in_client.post(reverse("setup:reopen"))["Location"] == reverse("setup:index")
    assert setup_progress(user=user).show
    assert logged_in_client.get(reverse("setup:step", args=["nope"])).status_code == 404


@pytest.mark.django_db
def test_template_step_needs_a_model_and_a_free_name(logged_in_client: Any, user: Any) -> None:
    page = logged_in_client.get(reverse("setup:step", args=["director"])).content.decode()
    assert "Add a model first" in page
    other = ApiConfig.objects.create(owner=user, name="M", model="m")
    logged_in_client.post(
        reverse("setup:step", args=["director"]), {"template": "triage", "name": "T", "api_config": other.pk}
    )
    response = logged_in_client.post(
        reverse("setup:step", args=["director"]), {"template": "triage", "name": "T", "api_config": other.pk}
    )
    assert response.status_code == 400 and "already have a director" in response.content.decode()


# The director's side of the first run against the fake OpenAI server: it asks the psychologist, saves a reply
# draft to the workspace and finishes; the psychologist's own call is told apart by its system prompt.
REPLY_DRAFT = "Dear Ergoform team,\n\nplease send the replacement frame and control panel for order ER-48213.\n"


def _script_director(llm: FakeOpenAI) -> None:
    llm.when(
        lambda body: "emotional state" in system_text(body),
        Reply.text("Frustrated but constructive: wants a replacement, not a refund."),
    )
    llm.script(
        Reply.calls(("agent__psychologist", {"input": "How does the client feel?"})),
        Reply.calls(
            (
                "workspace_add_item",
                {"label": "Reply draft", "path": "reply.md", "mimeType": "text/markdown", "data": REPLY_DRAFT},
            )
        ),
        Reply.text("Saved the analysis and a reply draft."),
    )


@pytest.mark.browser
def test_first_run_in_chromium(asgi_server: str, chromium: Any, user: Any, fake_llm: FakeOpenAI, tmp_path: Any) -> None:
    """Issue 15's first run on a fresh database, only through the browser: sign in → the wizard → import the demo
    mailbox as a file → add a model (a dead endpoint first, then the fake server) → template director → filter
    with the dry run → done → open a demo thread → Run director… → a real qcluster worker runs it → the result
    in Results. The time of the path (not asserted) is printed."""
    from tests.browser import console_errors, horizontal_overflow, login, screenshot

    archive = write_demo_archive(tmp_path / "demo.zip", build_demo_messages())
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with qcluster():
        started = time.perf_counter()
        # Notifications granted up front: the results app's one-time permission prompt would cover the buttons.
        context = chromium.new_context(viewport={"width": 1280, "height": 900}, permissions=["notifications"])
        page = context.new_page()
        errors = console_errors(page)
        login(page, asgi_server, user)
        page.goto(f"{asgi_server}/setup/")
        page.wait_for_selector("[data-testid=wizard-step-mailbox]")
        screenshot(page, "setup-mailbox-1280")
        # The wizard's own import form: the upload comes back to the wizard, at step 2.
        form = "[data-testid=wizard-import-form]"
        page.set_input_files(f"{form} input[type=file]", str(archive))
        page.fill(f"{form} input[name=new_account_name]", "Demo")
        page.click(f"{form} button[type=submit]")
        page.wait_for_selector("text=Imported into “Demo”", timeout=120_000)
        page.wait_for_selector("[data-testid=wizard-step-model]")  # the mailbox is connected: step 2
        imported = Message.objects.filter(account__owner=user).count()
        assert imported > 50
        page.select_option("select[name=provider]", "ollama")
        assert page.input_value("input[name=base_url]") == "http://127.0.0.1:11434/v1"
        page.fill("input[name=name]", "Local")
        page.fill("input[name=base_url]", dead)
        page.fill("input[name=model]", "fake-model")
        # A URL on this machine brought the CPU defaults (constrained output among them); the scripted server
        # below answers with native tool calls, as OpenAI does, so this user chooses those.
        assert page.input_value("select[name=tool_call_mode]") == "json_schema"
        page.select_option("select[name=tool_call_mode]", "auto")
        page.click("[data-testid=test-connection]")
        failure = page.wait_for_selector("[data-testid=probe-result]")
        # A closed port: the message names the endpoint and says what to fix.
        assert f"at {dead} (API config “Local”) refused the connection: is it running?" in failure.inner_text()
        screenshot(page, "setup-model-dead-1280")
        fake_llm.script(Reply.text("OK"))
        page.fill("input[name=base_url]", fake_llm.base_url)
        assert page.input_value("select[name=tool_call_mode]") == "auto"  # the user's choice stays
        page.click("[data-testid=test-connection]")
        page.wait_for_selector("[data-testid=probe-result]:has-text('Connection works.')")
        screenshot(page, "setup-model-1280")
        page.click("button:has-text('Save model and continue')")
        page.wait_for_selector("[data-testid=wizard-step-director]")
        assert page.input_value("input[name=name]") == "Client support manager"
        screenshot(page, "setup-director-1280")
        page.click("button:has-text('Create director')")
        page.wait_for_selector("[data-testid=wizard-step-filter]")
        page.click("[data-testid=test-form] button")
        page.wait_for_selector("[data-testid=test-summary]")
        page.click("[data-testid=filter-form] button")
        page.wait_for_selector("[data-testid=filters-present]")
        screenshot(page, "setup-filter-1280")
        assert horizontal_overflow(page) == 0
        page.click("[data-testid=finish-setup]")
        page.wait_for_selector("[data-testid=results-link]")
        screenshot(page, "setup-done-1280")

        # A demo thread, found with an operator query, and “Run director…” on it (no filter matches it).
        page.goto(f"{asgi_server}/search/?q=subject%3AER-48213")
        page.click("[data-testid=search-result] a")
        page.wait_for_selector("[data-testid=run-director-link]")
        _script_director(fake_llm)
        page.click("[data-testid=run-director-link]")
        page.click("[data-testid=run-director]")
        page.wait_for_selector("text=“Client support manager” started on this email.")
        run = Run.objects.get(director__owner=user)
        page.goto(f"{asgi_server}/results/")
        # The worker finishes the run; the tree refreshes itself (polling) until the run and its item are there.
        page.wait_for_selector(f"[data-node=run-{run.pk}]", timeout=60_000)
        page.wait_for_function(
            f"() => document.querySelector('[data-node=run-{run.pk}] [role=treeitem]') !== null", timeout=60_000
        )
        run.refresh_from_db()
        assert run.status == RunStatus.COMPLETED, (run.status, run.error)
        director_first = next(
            body for body in fake_llm.chat_requests() if "You manage client support" in system_text(body)
        )
        assert "ER-48213" in json.dumps(director_first["messages"], ensure_ascii=False)  # the director saw the email
        page.click(f"[data-node=run-{run.pk}] [role=treeitem] .rtree-link")
        pane = page.wait_for_selector("[data-testid=item-pane]")
        assert "replacement frame and control panel" in pane.inner_text()
        elapsed = time.perf_counter() - started
        print(f"\nfirst run, sign-in to a director's result in Results: {elapsed:.1f} s ({imported} demo emails)")
        screenshot(page, "first-run-result-1280")
        assert horizontal_overflow(page) == 0
        assert errors == []
        context.close()

    # The same pages at phone width, then the settings the wizard filled in.
    page = chromium.new_context(viewport={"width": 390, "height": 900}, permissions=["notifications"]).new_page()
    login(page, asgi_server, user)
    director = Director.objects.get(owner=user)
    for path, name in [
        ("/setup/mailbox/", "setup-mailbox-390"),
        ("/setup/model/", "setup-model-390"),
        ("/setup/done/", "setup-done-390"),
        (f"/settings/directors/{director.pk}/", "settings-director-390"),
        ("/settings/models/", "settings-models-390"),
        ("/settings/filters/", "settings-filters-390"),
        (f"/results/?node=run-{run.pk}", "first-run-result-390"),
    ]:
        page.goto(f"{asgi_server}{path}")
        screenshot(page, name)
        assert horizontal_overflow(page) == 0, path
    # Keyboard reordering: Alt+Down on the first agent's handle saves the new order.
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{asgi_server}/settings/directors/{director.pk}/")
    page.wait_for_selector("[data-testid=agent-list]")
    screenshot(page, "settings-director-1280")
    page.focus("#agent-list li:first-child .drag-handle")
    page.keyboard.press("Alt+ArrowDown")
    page.wait_for_selector("#agent-list[data-saved]")
    assert list(director.agents.order_by("order").values_list("slug", flat=True)) == [
        "response-agent",
        "psychologist",
    ]
    page.close()
    assert ApiConfig.objects.get(owner=user).base_url == fake_llm.base_url
    assert Filter.objects.filter(director__owner=user).count() == 1
