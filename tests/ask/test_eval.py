"""A floor on Ask over real third-party mail: the Enron inbox dean-c (971 mails, the archive's first box, so
only the start of the archive is read) imported through the real importer, full text only, and the questions
of bench/data/ask_questions.json written from it, run through the whole pipeline with the vocabulary file
emptied. Prints evidence recall@10, MRR and the expected value in the extractive answer; fails below the
floors (raise them as quality improves; the full benchmark is bench/ask.py)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from apps.accounts.actions import create_local_account
from apps.accounts.importers import import_path
from apps.accounts.models import Message
from apps.ask import actions, vocabulary
from apps.ask.models import RunStatus
from tests.services import shared_path

pytestmark = pytest.mark.django_db

BOXES = ("dean-c",)
QUESTIONS_FILE = Path(__file__).resolve().parents[2] / "bench" / "data" / "ask_questions.json"
# Measured on SQLite, full text only, vocabulary emptied: 7 questions, recall@10 1.000, MRR 0.929, values 3/4.
FLOOR_RECALL, FLOOR_MRR, FLOOR_VALUES = 0.85, 0.85, 3


@pytest.fixture(scope="module")
def eval_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("ask-eval")
    with tarfile.open(shared_path("data", "enron", "enron-inbox.tar.gz"), "r:gz") as archive:
        members = []
        for member in archive:
            box = member.name.split("/")[1] if "/" in member.name else ""
            if box in BOXES and member.isfile():
                members.append(member)
            elif members and box and box not in BOXES:
                break  # past the box: the rest of the archive is not needed
        archive.extractall(target, members=members, filter="data")
    return target / "maildir"


def flat(text: str) -> str:
    return " ".join(text.replace("**", "").split()).lower()


def test_ask_mini_eval(
    user: Any, eval_tree: Path, django_capture_on_commit_callbacks: Any, settings: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    settings.SEARCH_EMBED_ON_INGEST = False
    settings.ASK_LLM = {}
    empty = tmp_path / "vocabulary.json"
    empty.write_text("{}", encoding="utf-8")
    monkeypatch.setenv("MAILAGENT_ASK_VOCABULARY", str(empty))
    assert vocabulary.vocabulary().answer_types == {}

    questions = [
        q
        for q in json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))["questions"]
        if q.get("source", "").split("/")[0] in BOXES
    ]
    assert len(questions) >= 6
    account = create_local_account(owner=user, name="ask-eval")
    with django_capture_on_commit_callbacks(execute=True):
        import_path(account, eval_tree)
    assert Message.objects.filter(account=account).count() > 900

    found = 0
    reciprocal = 0.0
    values = 0
    facts = 0
    lines: list[str] = []
    for item in questions:
        run = actions.create_ask_run(owner=user, question=item["question"])
        finished = actions.execute_ask_run(run_id=run.pk)
        assert finished is not None and finished.status == RunStatus.DONE, finished and finished.error
        ids = [row["message_id"] for row in finished.evidence[:10]]
        rank = next((i for i, mid in enumerate(ids, start=1) if mid in item["targets"]), None)
        if rank is not None:
            found += 1
            reciprocal += 1.0 / rank
        value = ""
        if item.get("expected"):
            facts += 1
            ok = flat(item["expected"]) in flat(finished.answer)
            values += ok
            value = f"  value {'found' if ok else 'missing'}"
        lines.append(f"  {rank or '-':>2} [{item['kind']}] {item['question']}{value}")
    recall, mrr = found / len(questions), reciprocal / len(questions)
    print(
        f"\nask mini-eval: {len(questions)} questions; recall@10 {recall:.3f}, MRR {mrr:.3f}, values {values}/{facts}"
    )
    print("\n".join(lines))
    assert recall >= FLOOR_RECALL and mrr >= FLOOR_MRR, (recall, mrr)
    assert values >= FLOOR_VALUES, values
