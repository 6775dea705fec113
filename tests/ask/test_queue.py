"""An Ask run whose model is busy says where it waits: "queue" events with the real number ahead in the
model's line (apps/llm/queue.py), rendered in the run's status badge, then its turn and the usual steps."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.template.loader import render_to_string

from apps.ask import actions, runner
from apps.ask.events import AskEvent
from apps.ask.llm import environment_llm_config
from apps.ask.models import AskRun, RunStatus
from apps.llm.models import GenerationTicket
from tests.ask.conftest import KEY_QUESTION, AskMailbox
from tests.ask.test_realtime import _connect, _mailbox, _session
from tests.fakes.openai_server import FakeOpenAI, Reply

ANOTHER_MACHINE = "another-machine|00000000-0000-0000-0000-000000000000|4242|99"


@pytest.mark.django_db
def test_a_run_waiting_for_its_model_reports_its_place_then_goes_on(
    ask_mailbox_text: AskMailbox, fake_llm: FakeOpenAI
) -> None:
    fake_llm.default = Reply.text("Your QNB payment is due on 11/05/2026 [1].")
    config = environment_llm_config()
    assert config is not None
    config_key = config.key
    # Every slot of the model (Ask's environment model: 4) is taken by requests of another machine.
    blockers = [
        GenerationTicket.objects.create(key=config_key, holder=ANOTHER_MACHINE, active=True).pk
        for _ in range(config.max_concurrency)
    ]
    events: list[AskEvent] = []

    def emit(event: AskEvent) -> None:
        events.append(event)
        if event["type"] == "queue" and (event.get("payload") or {}).get("waiting"):
            GenerationTicket.objects.filter(pk__in=blockers).delete()  # the requests ahead finish

    run = actions.create_ask_run(owner=ask_mailbox_text.user, question=KEY_QUESTION)
    finished = actions.execute_ask_run(run_id=run.pk, emit=emit)

    assert finished is not None and finished.status == RunStatus.DONE, finished and finished.error
    queue = [(e["detail"], e.get("payload")) for e in events if e["type"] == "queue"]
    assert queue[:2] == [
        ("waiting for the model: 4 ahead", {"waiting": True, "ahead": 4, "generating": 4}),
        ("", {"waiting": False}),
    ]
    assert len(queue) == 2  # later calls found the line empty: nothing more to say
    assert fake_llm.chat_requests()
    assert not GenerationTicket.objects.exists()


def test_the_status_badge_shows_the_place_until_the_turn_comes() -> None:
    waiting = render_to_string(
        "ask/partials/status.html", {"run_id": "7", "status": "running", "queue": {"waiting": True, "ahead": 3}}
    )
    assert "waiting for the model: 3 ahead" in waiting and "is-queued" in waiting
    generating = render_to_string("ask/partials/status.html", {"run_id": "7", "status": "running"})
    assert "working…" in generating and "is-queued" not in generating


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_sync_thread_connections")
async def test_the_live_run_shows_waiting_for_the_model_then_answers(user: Any, fake_llm: FakeOpenAI) -> None:
    """Through the web process's own path: runner.launch → the pipeline in a worker thread → the queue's
    report → the channel layer → the run's websocket, as the HTML fragment the page swaps in."""
    fake_llm.default = Reply.text("Your QNB payment is due on 11/05/2026 [1].")
    config = environment_llm_config()
    assert config is not None
    await database_sync_to_async(_mailbox)(user)
    blockers = [
        (
            await database_sync_to_async(GenerationTicket.objects.create)(
                key=config.key, holder=ANOTHER_MACHINE, active=True
            )
        ).pk
        for _ in range(config.max_concurrency)
    ]
    run = await database_sync_to_async(actions.create_ask_run)(owner=user, question="when is the QNB payment due?")
    socket = await _connect(await _session(user), f"/ws/ask/{run.pk}/")
    assert (await socket.connect())[0]
    await socket.receive_from(timeout=10)  # the snapshot
    task = await runner.launch(str(run.pk))
    fragments: list[str] = []
    while True:
        output = await socket.receive_output(timeout=60)
        if output["type"] == "websocket.close":
            break
        fragments.append(output.get("text", ""))
        if "waiting for the model: 4 ahead" in fragments[-1]:
            await database_sync_to_async(GenerationTicket.objects.filter(pk__in=blockers).delete)()
    await task
    waiting = [f for f in fragments if "waiting for the model" in f]
    assert waiting and f'id="ask-status-{run.pk}"' in waiting[0] and "is-queued" in waiting[0]
    after = fragments[fragments.index(waiting[-1]) + 1 :]
    assert any(f'id="ask-status-{run.pk}"' in f and "working…" in f for f in after)  # its turn came
    finished = await database_sync_to_async(AskRun.objects.get)(pk=run.pk)
    assert finished.status == RunStatus.DONE and "11/05/2026" in finished.answer
