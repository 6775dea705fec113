"""Conversation benchmark (issue 35, item 6): the scripted multi-turn dialogues of
bench/data/conversations.json, asked turn after turn as the composer asks them, over the demo mailbox and
the Enron inbox dean-c (../shared/data/enron, the box tests/ask/test_eval.py reads).

Each mailbox belongs to its own user. Every turn goes through the product's own entry points, as
`POST /api/ask` and the Ask launcher do: the question joins the conversation of the user's previous turn (the
composer continues the last conversation; `selectors.access_conversation` + `actions.create_ask_run`), and
`actions.execute_ask_run` runs it; the pipeline itself decides whether the question follows the previous
question or starts a new topic (`apps/ask/topics.py`, stored in `run.scope["topic"]`). Dialogues run in the
file's order, so a dialogue's first turn follows the previous dialogue of the same mailbox: a topic switch
too.

Scores, per language and per turn kind, and the list of misses:
- topic boundary: the product's decision (continues / new topic) against the turn's `new_topic`. Only
  question and draft runs make that decision (chat and instruction runs search nothing and read no earlier
  turn); a question with no earlier question in its conversation starts a new topic. Turns the product did
  not judge are counted apart.
- intent: `run.intent` against the turn's `intent`.
- follow-up resolution: for a follow-up question with an expected mail, that mail (an Enron copy of it, or
  an evidence row standing for its thread) among the rows the answer cites, and among the evidence rows
  shown (related rows excluded); the exact mail alone is printed too.
  The same numbers for every question with an expected mail are printed as a baseline.

    .venv/bin/python bench/conversation.py                      # a fresh SQLite database in a temp DATA_DIR
    .venv/bin/python bench/conversation.py --limit 10           # the first 10 dialogues
    .venv/bin/python bench/conversation.py --workdir /tmp/conv  # build once, reuse (earlier runs are removed)
    bench/conversation.py --model-base-url http://127.0.0.1:11434/v1 --model qwen2.5:1.5b

Without --model-base-url no language model is configured (the MAILAGENT_ASK_LLM_* variables are ignored),
and nothing uses the network: embeddings are local. Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.search import ENRON, setup_django  # noqa: E402

DIALOGUES_FILE = REPO / "bench" / "data" / "conversations.json"
ENRON_BOXES = ("dean-c",)
USERS = {"demo": "conv-demo", "enron": "conv-enron"}
LANGUAGES = ("en", "de", "fr", "es", "nl", "tr")


def load_dialogues(path: Path = DIALOGUES_FILE) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8"))["dialogues"])


def extract_boxes(workdir: Path, boxes: tuple[str, ...] = ENRON_BOXES) -> Path:
    """The Enron boxes named, as tests/ask/test_eval.py extracts them (dean-c is the archive's first box, so
    only the start of the archive is read)."""
    target = workdir / "enron"
    with tarfile.open(ENRON, "r:gz") as archive:
        members = []
        for member in archive:
            box = member.name.split("/")[1] if "/" in member.name else ""
            if box in boxes and member.isfile():
                members.append(member)
            elif members and box and box not in boxes:
                break  # past the boxes: the rest of the archive is not needed
        archive.extractall(target, members=members, filter="data")
    return target / "maildir"


def build(workdir: Path) -> None:
    from django.contrib.auth import get_user_model

    from apps.accounts.actions import create_local_account
    from apps.accounts.demo_mailbox.importing import import_demo_mailbox
    from apps.accounts.importers import import_path
    from apps.accounts.signals import messages_stored
    from apps.search import actions

    users = get_user_model().objects
    demo_user = users.create_user(username=USERS["demo"], email="conv-demo@example.com", password="x" * 20)
    enron_user = users.create_user(username=USERS["enron"], email="conv-enron@example.com", password="x" * 20)
    messages_stored.disconnect(dispatch_uid="search.index_stored_messages")
    started = time.perf_counter()
    out = io.StringIO()
    import_demo_mailbox(owner=demo_user, stdout=out)
    print(out.getvalue().strip())
    maildir = extract_boxes(workdir)
    summary = import_path(create_local_account(owner=enron_user, name="enron"), maildir)
    seconds = time.perf_counter() - started
    print(f"enron {'+'.join(ENRON_BOXES)}: {summary.imported} messages; imports took {seconds:.0f}s")
    actions.reindex_all()
    started = time.perf_counter()
    # The background backfill's own entry point (as tests/ask/conftest.py): search vectors, then gists.
    embedded = actions.backfill_embeddings(requeue=False, seconds=0)
    print(f"embedded {embedded} documents and gists in {time.perf_counter() - started:.0f}s")


@dataclass
class Turn:
    dialogue: str
    language: str
    mailbox: str
    index: int
    text: str
    role: str
    expected_new: bool
    expected_intent: str
    expect_id: str
    expect_subject: str
    intent: str = ""
    decided: bool | None = None  # True: continues; False: new topic; None: not judged
    reason: str = ""
    cited_hit: bool | None = None  # the expected mail, a copy, or its thread is a cited row
    cited_exact: bool | None = None  # the expected mail itself (or a copy) is a cited row
    evidence_hit: bool | None = None
    answer_mode: str = ""
    answer: str = ""
    top: list[str] = field(default_factory=list)
    ms: int = 0
    error: str = ""


def turn_role(turn: dict[str, Any], index: int) -> str:
    intent = turn["intent"]
    if intent == "chat":
        return "chat"
    if intent == "unsupported":
        return "instruction"
    if intent == "follow_up_drafts":
        return "drafts"
    if not turn["new_topic"]:
        return "follow-up"
    return "opening" if index == 0 else "switch"


def flat_subject(subject: str) -> str:
    import re

    return " ".join(re.sub(r"^((re|fw|fwd)\s*:\s*)+", "", subject.strip(), flags=re.IGNORECASE).split()).lower()


def row_matches(row: dict[str, Any], turn: Turn, keys: set[str], threads: set[int]) -> bool:
    """The row is the expected mail or a copy of it; with `threads`, also a row standing for its thread (a row
    names its thread's best match, the answer may quote a newer mail of it: a schedule change)."""
    from bench.ask import is_relevant

    if threads and row.get("thread_id") in threads:
        return True
    if turn.expect_id:
        return bool(row.get("message_id")) and is_relevant(row["message_id"], (turn.expect_id,), keys)
    return flat_subject(turn.expect_subject) in flat_subject(row.get("subject") or "")


def topic_decision(run: Any) -> tuple[bool | None, str]:
    topic = (run.scope or {}).get("topic")
    if topic is not None:
        return bool(topic.get("continues")), str(topic.get("reason", ""))
    if run.intent in ("question", "follow_up_drafts"):
        return False, "no earlier question in the conversation"
    return None, f"not judged ({run.intent or run.status})"


def cited_ranks(run: Any) -> set[int]:
    scope = run.scope or {}
    ranks = set((scope.get("citation_check") or {}).get("cited") or [])
    extractive = (scope.get("extractive") or {}).get("cited")
    if extractive:
        ranks.add(int(extractive))
    return ranks


def ask_turn(user: Any, previous: Any, text: str) -> Any:
    """As POST /api/ask with the composer's conversation id (the launcher continues the last conversation)."""
    from apps.ask import actions, selectors

    conversation = None
    if previous is not None:
        conversation = selectors.access_conversation(user=user, conversation_id=previous.conversation_id)
    run = actions.create_ask_run(owner=user, question=text, conversation=conversation)
    return actions.execute_ask_run(run_id=run.pk)


def run_dialogues(dialogues: list[dict[str, Any]]) -> list[Turn]:
    from django.contrib.auth import get_user_model

    from apps.ask.models import AskConversation, AskRun, Draft
    from bench.ask import relevant_keys, thread_of

    users = {box: get_user_model().objects.get(username=name) for box, name in USERS.items()}
    for user in users.values():  # a reused workdir: start from no conversation and no earlier run's drafts
        Draft.objects.filter(owner=user).delete()
        AskRun.objects.filter(owner=user).delete()
        AskConversation.objects.filter(owner=user).delete()
    last: dict[str, Any] = {box: None for box in users}
    turns: list[Turn] = []
    started = time.perf_counter()
    for number, dialogue in enumerate(dialogues, start=1):
        box = dialogue["mailbox"]
        for index, item in enumerate(dialogue["turns"]):
            turn = Turn(
                dialogue=dialogue["id"],
                language=dialogue["language"],
                mailbox=box,
                index=index,
                text=item["text"],
                role=turn_role(item, index),
                expected_new=bool(item["new_topic"]),
                expected_intent=item["intent"],
                expect_id=item.get("expect_message_id", ""),
                expect_subject=item.get("expect_subject", ""),
            )
            t0 = time.perf_counter()
            run = ask_turn(users[box], last[box], turn.text)
            turn.ms = int((time.perf_counter() - t0) * 1000)
            last[box] = run
            turn.intent = run.intent
            turn.answer_mode = run.answer_mode
            turn.answer = " ".join((run.answer or "").split())[:160]
            turn.error = run.error or ""
            turn.decided, turn.reason = topic_decision(run)
            rows = [row for row in run.evidence or [] if not row.get("related")]
            turn.top = [str(row.get("subject", ""))[:60] for row in rows[:3]]
            if turn.expect_id or turn.expect_subject:
                keys = relevant_keys((turn.expect_id,)) if turn.expect_id else set()
                threads = thread_of((turn.expect_id,)) if turn.expect_id else set()
                cited = [row for row in rows if row.get("rank") in cited_ranks(run)]
                turn.evidence_hit = any(row_matches(row, turn, keys, threads) for row in rows)
                turn.cited_hit = any(row_matches(row, turn, keys, threads) for row in cited)
                turn.cited_exact = any(row_matches(row, turn, keys, set()) for row in cited)
            turns.append(turn)
        if number % 10 == 0 or number == len(dialogues):
            print(f"  {number}/{len(dialogues)} dialogues, {len(turns)} turns, {time.perf_counter() - started:.0f}s")
    return turns


def ratio(hits: int, total: int) -> str:
    return f"{hits}/{total} {hits / total:6.1%}" if total else "-"


def topic_ok(turn: Turn) -> bool:
    return turn.decided is not None and turn.decided == (not turn.expected_new)


def row_numbers(group: list[Turn]) -> list[str]:
    judged = [t for t in group if t.decided is not None]
    follow = [t for t in group if t.role == "follow-up" and t.cited_hit is not None]
    return [
        str(len(group)),
        ratio(sum(topic_ok(t) for t in judged), len(judged)),
        str(len(group) - len(judged)),
        ratio(sum(t.intent == t.expected_intent for t in group), len(group)),
        ratio(sum(bool(t.cited_hit) for t in follow), len(follow)),
        ratio(sum(bool(t.evidence_hit) for t in follow), len(follow)),
    ]


def print_table(title: str, groups: list[tuple[str, list[Turn]]]) -> None:
    header = ["turns", "topic boundary", "not judged", "intent", "follow-up cited", "follow-up in evidence"]
    print(f"\n{title}")
    print(f"{'':14}" + "".join(f"{h:>22}" for h in header))
    for name, group in groups:
        if group:
            print(f"{name:14}" + "".join(f"{cell:>22}" for cell in row_numbers(group)))


def report(turns: list[Turn], dialogues: list[dict[str, Any]], seconds: float) -> None:
    languages = [lang for lang in LANGUAGES if any(t.language == lang for t in turns)]
    took = f" in {seconds:.0f}s" if seconds else ""
    print(f"\n{len(dialogues)} dialogues, {len(turns)} turns{took}")
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for dialogue in dialogues:
        counts[dialogue["language"]][dialogue["kind"]] += 1
    kinds = sorted({d["kind"] for d in dialogues})
    print("dialogues per language and kind: " + "  ".join(f"{k}" for k in kinds))
    for lang in languages:
        print(
            f"  {lang}: "
            + "  ".join(f"{k} {counts[lang][k]}" for k in kinds)
            + f"  (total {sum(counts[lang].values())})"
        )
    print_table("per language", [(lang, [t for t in turns if t.language == lang]) for lang in languages])
    others = [t for t in turns if t.language != "en"]
    print_table("", [("all", turns), ("non-English", others)])
    roles = ("opening", "switch", "follow-up", "chat", "instruction", "drafts")
    print_table("per turn kind", [(role, [t for t in turns if t.role == role]) for role in roles])
    print_table("per mailbox", [(box, [t for t in turns if t.mailbox == box]) for box in USERS])
    kind_of = {d["id"]: d["kind"] for d in dialogues}
    print_table("per dialogue kind", [(k, [t for t in turns if kind_of[t.dialogue] == k]) for k in kinds])

    intents = sorted({t.expected_intent for t in turns} | {t.intent for t in turns})
    print("\nintent confusion (rows expected, columns the product's):")
    print(f"{'':18}" + "".join(f"{i or '(none)':>18}" for i in intents))
    for wanted in sorted({t.expected_intent for t in turns}):
        row = [sum(1 for t in turns if t.expected_intent == wanted and t.intent == got) for got in intents]
        print(f"{wanted:18}" + "".join(f"{n:>18}" for n in row))
    print("\ntopic decisions on judged turns (rows expected):")
    for expected in (True, False):
        group = [t for t in turns if t.decided is not None and t.expected_new == expected]
        label = "new topic" if expected else "continues"
        new, continues = sum(t.decided is False for t in group), sum(t.decided is True for t in group)
        print(f"  {label:10} judged new {new:>4}   judged continues {continues:>4}")
    skipped = [t for t in turns if t.decided is None]
    strict = sum((t.decided is True) == (not t.expected_new) for t in turns)
    print(
        "  every turn, a turn not judged counting as a new topic (its run reads no earlier turn): "
        + ratio(strict, len(turns))
    )
    print(
        f"  not judged: {len(skipped)} (expected new {sum(t.expected_new for t in skipped)},"
        f" expected to continue {sum(not t.expected_new for t in skipped)})"
    )
    follow = [t for t in turns if t.role == "follow-up" and t.cited_exact is not None]
    print(
        "follow-up questions whose exact expected mail (or a copy) is cited, its thread not counted: "
        + ratio(sum(bool(t.cited_exact) for t in follow), len(follow))
    )
    expected_rows = [t for t in turns if t.role in ("opening", "switch") and t.cited_hit is not None]
    print(
        "baseline, opening and switch questions with an expected mail: cited "
        + ratio(sum(bool(t.cited_hit) for t in expected_rows), len(expected_rows))
        + ", in evidence "
        + ratio(sum(bool(t.evidence_hit) for t in expected_rows), len(expected_rows))
    )
    ms = sorted(t.ms for t in turns)
    print(f"turn latency: p50 {ms[len(ms) // 2]} ms, p95 {ms[int(len(ms) * 0.95)]} ms, max {ms[-1]} ms")
    errors = [t for t in turns if t.error]
    if errors:
        print(f"\n{len(errors)} runs failed:")
        for t in errors:
            print(f"  {t.dialogue}#{t.index + 1} {t.text!r}: {t.error[:200]}")

    print("\nmisses:")
    for t in turns:
        problems = []
        if t.intent != t.expected_intent:
            problems.append(f"intent {t.intent or '-'} (expected {t.expected_intent})")
        if t.decided is not None and not topic_ok(t):
            got = "continues" if t.decided else "new topic"
            problems.append(f"topic: {got}, expected {'new topic' if t.expected_new else 'continues'} [{t.reason}]")
        if t.cited_hit is False:
            where = "in the evidence, not cited" if t.evidence_hit else "not in the evidence"
            problems.append(f"expected mail {where}; top: {' | '.join(t.top) or '-'}")
        if problems:
            print(f"  {t.dialogue}#{t.index + 1} [{t.role}] {t.text!r}: " + "; ".join(problems))
            print(f"      answer ({t.answer_mode or '-'}): {t.answer}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", help="Reuse (or build and keep) the mailboxes' database here.")
    parser.add_argument("--limit", type=int, help="Only the first N dialogues.")
    parser.add_argument("--language", choices=LANGUAGES, help="Only dialogues in this language.")
    parser.add_argument("--dialogues", default=str(DIALOGUES_FILE), help="The dialogue file.")
    parser.add_argument("--model-base-url", help="An OpenAI-compatible endpoint for Ask (MAILAGENT_ASK_LLM_*).")
    parser.add_argument("--model", help="The model name at --model-base-url.")
    parser.add_argument("--api-key", default="sk-bench", help="The key sent to --model-base-url.")
    parser.add_argument("--json", help="Also write every turn's outcome to this file.")
    parser.add_argument("--from-json", help="Print the report of an earlier run's --json file; run nothing.")
    args = parser.parse_args()
    if bool(args.model_base_url) != bool(args.model):
        parser.error("--model-base-url and --model go together")
    for name in ("MAILAGENT_ASK_LLM_BASE_URL", "MAILAGENT_ASK_LLM_API_KEY", "MAILAGENT_ASK_LLM_MODEL"):
        os.environ.pop(name, None)
    if args.model_base_url:
        os.environ["MAILAGENT_ASK_LLM_BASE_URL"] = args.model_base_url
        os.environ["MAILAGENT_ASK_LLM_MODEL"] = args.model
        os.environ["MAILAGENT_ASK_LLM_API_KEY"] = args.api_key
    if args.from_json:
        turns = [Turn(**item) for item in json.loads(Path(args.from_json).read_text(encoding="utf-8"))]
        asked = {t.dialogue for t in turns}
        report(turns, [d for d in load_dialogues(Path(args.dialogues)) if d["id"] in asked], 0.0)
        return
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="mailagent-bench-conversation-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ["DATA_DIR"] = str(workdir / "data")
    setup_django(workdir, postgres=False)

    from django.contrib.auth import get_user_model

    from apps.ask.llm import ask_model

    if get_user_model().objects.filter(username__in=USERS.values()).count() != len(USERS):
        build(workdir)
    dialogues = load_dialogues(Path(args.dialogues))
    if args.language:
        dialogues = [d for d in dialogues if d["language"] == args.language]
    if args.limit:
        dialogues = dialogues[: args.limit]
    model = ask_model(get_user_model().objects.get(username=USERS["demo"]))
    print(f"workdir {workdir}; model: {model.label or 'none (no language model configured)'}")
    started = time.perf_counter()
    turns = run_dialogues(dialogues)
    report(turns, dialogues, time.perf_counter() - started)
    if args.json:
        Path(args.json).write_text(json.dumps([t.__dict__ for t in turns], ensure_ascii=False, indent=1), "utf-8")


if __name__ == "__main__":
    main()
