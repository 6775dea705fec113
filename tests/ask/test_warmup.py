"""The per-process warm-up the Ask page starts: dateparser's languages built before the first question."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from dateparser.languages.dictionary import Dictionary
from django.test import override_settings
from django.urls import reverse

from apps.ask import warmup


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmup, "_thread", None)


def _warm_up_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == warmup.THREAD_NAME]


@pytest.mark.django_db(transaction=True)  # the warm-up thread reads the search index on its own connection
def test_the_ask_page_warms_dateparser_once_per_process(
    logged_in_client: Any, fresh_process: None, caplog: pytest.LogCaptureFixture
) -> None:
    with override_settings(ASK_WARM_UP=True):
        assert logged_in_client.get(reverse("ask:panel")).status_code == 200
        threads = _warm_up_threads()
        assert len(threads) == 1
        threads[0].join(timeout=120)
        assert not threads[0].is_alive()
        assert "warm-up failed" not in caplog.text  # the embedder and the search index loaded too
        assert logged_in_client.get(reverse("ask:panel")).status_code == 200
        assert not _warm_up_threads()  # the second page view starts nothing
    # every language's patterns are built (a question only ever builds those of its own date words)
    built = {name for names in Dictionary._split_relative_regex_cache.values() for name in names}
    assert len(built) > 150


@pytest.mark.django_db
def test_off_in_settings_starts_nothing(logged_in_client: Any, fresh_process: None) -> None:
    with override_settings(ASK_WARM_UP=False):
        assert logged_in_client.get(reverse("ask:panel")).status_code == 200
    assert not _warm_up_threads()
    assert warmup._thread is None


def test_a_web_process_warms_up_as_it_starts_only_when_configured(tmp_path: Any) -> None:
    """The ASGI application every web process imports starts the warm-up only with
    MAILAGENT_ASK_WARM_UP_AT_START=1 (and the warm-up not turned off): by default an idle web process loads no
    model and no index (issue 40: the models held by a server nobody used were most of its memory); the Ask
    page view starts it instead (the tests above)."""
    probe = (
        "import threading, mailagent.asgi; "
        f"print(sorted(t.name for t in threading.enumerate() if t.name == {warmup.THREAD_NAME!r}))"
    )
    root = Path(__file__).resolve().parents[2]
    cases = (
        ({"MAILAGENT_ASK_WARM_UP": "1", "MAILAGENT_ASK_WARM_UP_AT_START": "1"}, f"[{warmup.THREAD_NAME!r}]"),
        ({"MAILAGENT_ASK_WARM_UP": "1"}, "[]"),  # the default
        ({"MAILAGENT_ASK_WARM_UP": "0", "MAILAGENT_ASK_WARM_UP_AT_START": "1"}, "[]"),
    )
    for number, (extra, expected) in enumerate(cases):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAILAGENT_ASK_WARM_UP")}
        env.update(extra, DATA_DIR=str(tmp_path / str(number)))
        done = subprocess.run(
            [sys.executable, "-c", probe], env=env, cwd=root, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().splitlines()[-1] == expected, (extra, done.stdout)
