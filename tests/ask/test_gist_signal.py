"""The gist step of an Ask run (apps/ask/retrieval.pool_gists, apps/search/gist.py): every candidate is
compared with the question by its gist when the backfill has stored them (its rank orders the shortlist and is
a rerank signal); a few missing gists are embedded during the run; with many missing the step is skipped and
says why, the signal left out of the run rather than compared unevenly."""

from __future__ import annotations

from typing import Any

import pytest

from apps.ask import retrieval
from apps.ask.models import AskRun
from apps.search import actions as search_actions
from apps.search.gist import message_documents
from apps.search.models import SearchGist
from tests.ask.conftest import AskMailbox, run_ask

pytestmark = pytest.mark.django_db(transaction=False)

QUESTION = "did Ergoform ship my replacement desk, and what is the tracking number?"


def gist_step(run: AskRun) -> dict[str, Any]:
    return dict(next(step for step in run.steps if step["stepId"] == "gist"))


def test_with_the_backfill_done_every_shortlisted_mail_has_a_gist_signal(ask_mailbox: AskMailbox) -> None:
    run = run_ask(ask_mailbox, QUESTION)
    step = gist_step(run)
    assert step["status"] == "done"
    assert step["detail"].startswith(f"{run.scope['candidates']} candidates compared by gist (")
    gists = [row["features"]["gist"] for row in run.evidence if row["features"]]
    # (1 + K) / (K + its rank by gist among the shortlist): every row has one, no two share a rank
    assert all(0 < value <= 1.0 for value in gists) and len(set(gists)) == len(gists)
    assert "Ticket #77104" in run.evidence[0]["subject"]


def test_too_many_missing_gists_leave_the_signal_out_a_few_are_embedded_on_the_way(
    ask_mailbox_text: AskMailbox, monkeypatch: Any
) -> None:
    """ask_mailbox_text is indexed but its backfill never ran: no vectors, no gists."""
    run = run_ask(ask_mailbox_text, QUESTION)
    step = gist_step(run)
    assert step["status"] == "skipped"
    assert step["detail"] == "the background backfill has not embedded these mails' gists yet"
    assert all(row["features"].get("gist", 0.0) == 0.0 for row in run.evidence)
    assert not SearchGist.objects.filter(document__account=ask_mailbox_text.account).exists()

    # The backfill reaches all but a few of the mails this question finds: those few are embedded now.
    found = [row["message_pk"] for row in run.evidence]
    documents = message_documents(found)
    missing = {documents[pk]["id"] for pk in found[: retrieval.GIST_ON_DEMAND - 1]}
    search_actions.embed_stale_gists()
    SearchGist.objects.filter(document_id__in=missing).delete()
    again = run_ask(ask_mailbox_text, QUESTION)
    assert gist_step(again)["detail"].startswith(f"{again.scope['candidates']} candidates compared by gist (")
    assert SearchGist.objects.filter(document_id__in=missing).count() == len(missing)


def test_switched_off_the_step_says_so(ask_mailbox_text: AskMailbox, settings: Any) -> None:
    settings.SEARCH_GIST_EMBEDDER = "none"
    step = gist_step(run_ask(ask_mailbox_text, QUESTION))
    assert step["status"] == "skipped" and step["detail"] == "gist model switched off (SEARCH_GIST_EMBEDDER=none)"
