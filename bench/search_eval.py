"""Retrieval quality and HTTP load for bench/search.py: labelled questions (bench/data/search_questions.json)
ranked by a plain bm25 OR-query baseline and by the keyword, semantic and hybrid modes; and concurrent
clients against /api/search on the production web server (uvicorn). Prints numbers, asserts nothing."""

from __future__ import annotations

import json
import re
import statistics
import threading
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

QUESTIONS_FILE = Path(__file__).resolve().parent / "data" / "search_questions.json"
MODES = ("baseline", "keyword", "semantic", "hybrid")
TOP = 10


@dataclass(slots=True)
class Question:
    text: str
    kind: str
    split: str
    targets: tuple[str, ...]
    relevant: set[int] = field(default_factory=set)  # message pks: the targets and their copies


def load_questions(path: Path = QUESTIONS_FILE) -> list[Question]:
    data = json.loads(path.read_text())
    return [
        Question(text=q["question"], kind=q["kind"], split=q["split"], targets=tuple(q["targets"]))
        for q in data["questions"]
    ]


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text or "").lower()
    return " ".join(re.findall(r"\w+", text))


def content_key(subject: str, body: str) -> str:
    """Enron holds many copies of one mail (each recipient's inbox): a copy answers the question as well."""
    subject = re.sub(r"^((re|fw|fwd)\s*:\s*)+", "", (subject or "").strip().lower())
    lines = [line for line in (body or "").splitlines() if line.strip() and not line.lstrip().startswith(">")]
    return _normalize(subject) + "|" + _normalize(" ".join(lines))[:300]


def resolve_relevant(questions: Sequence[Question], account_id: int) -> None:
    from apps.accounts.models import Message

    messages = Message.objects.filter(account_id=account_id)
    wanted = {mid for q in questions for mid in q.targets}
    target_keys: dict[str, str] = {}
    for message_id, subject, body in messages.filter(message_id__in=wanted).values_list(
        "message_id", "subject", "body_text"
    ):
        target_keys[str(message_id)] = content_key(subject, body)
    keys = set(target_keys.values())
    copies: dict[str, set[int]] = {}
    for pk, subject, body in messages.values_list("pk", "subject", "body_text").iterator(chunk_size=2000):
        key = content_key(subject, body)
        if key in keys:
            copies.setdefault(key, set()).add(pk)
    for question in questions:
        for target in question.targets:
            target_key = target_keys.get(target)
            if target_key is None:
                print(f"  warning: target {target} of {question.text!r} is not in the corpus")
                continue
            question.relevant |= copies.get(target_key, set())


# ---------------------------------------------------------------- the baseline


def baseline_ranking(question: str, limit: int = TOP) -> list[int]:
    """A plain bm25 over subject, people (sender and recipients) and body with the question's words OR-ed:
    no stopwords, no column weights, no fusion. Message pks, best first."""
    from django.db import connection

    from apps.search.folding import fold_tokens

    words = list(dict.fromkeys(fold_tokens(question)))
    if not words:
        return []
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT d.message_id FROM search_fts JOIN search_document d ON d.id = search_fts.rowid"
                " WHERE search_fts MATCH %s ORDER BY bm25(search_fts) LIMIT %s",
                [" OR ".join(f'"{w}"' for w in words), limit],
            )
        else:
            cursor.execute(
                "SELECT d.message_id FROM search_document d, to_tsquery('simple', %s) q WHERE d.tsv @@ q"
                " ORDER BY ts_rank_cd(d.tsv, q, 1) DESC LIMIT %s",
                [" | ".join(words), limit],
            )
        return [row[0] for row in cursor.fetchall() if row[0] is not None]


def ranking(mode: str, question: str, account_id: int) -> list[int]:
    from apps.search.backends.base import SearchFilters
    from apps.search.selectors import normalize_mode, search_page

    if mode == "baseline":
        return baseline_ranking(question)
    # What the search page, /api/search and `manage.py search --json` return: the search syntax, the semantic
    # relevance floor, one entry per message.
    result = search_page(
        question,
        mode=normalize_mode(mode),
        per_page=TOP,
        group=False,
        base=SearchFilters(account_ids=(account_id,)),
    )
    return [row.pk for row in result.rows if row.kind == "mail"]


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return p50 * 1000, p95 * 1000


@dataclass(slots=True)
class ModeResult:
    ranks: list[int | None]
    seconds: list[float]


def evaluate(
    questions: Sequence[Question], account_id: int, modes: Sequence[str] = MODES, *, show_misses: bool = False
) -> dict[str, ModeResult]:
    results: dict[str, ModeResult] = {}
    for mode in modes:
        ranking(mode, "warm up", account_id)
        result = ModeResult(ranks=[], seconds=[])
        for question in questions:
            started = time.perf_counter()
            ranked = ranking(mode, question.text, account_id)
            result.seconds.append(time.perf_counter() - started)
            rank = next((i for i, pk in enumerate(ranked, start=1) if pk in question.relevant), None)
            result.ranks.append(rank)
            if show_misses and rank != 1:
                print(f"  {mode:<9} rank {rank or '-':>2}  [{question.kind}/{question.split}] {question.text}")
        results[mode] = result
    return results


def _metrics(ranks: Sequence[int | None]) -> tuple[float, float, float]:
    n = len(ranks) or 1
    at1 = sum(1 for r in ranks if r == 1) / n
    at10 = sum(1 for r in ranks if r is not None and r <= TOP) / n
    mrr = sum(1.0 / r for r in ranks if r is not None) / n
    return at1, at10, mrr


def report(questions: Sequence[Question], results: dict[str, ModeResult]) -> None:
    groups: list[tuple[str, Callable[[Question], bool]]] = [("all", lambda q: True)]
    for split in sorted({q.split for q in questions}):
        groups.append((f"split={split}", lambda q, split=split: q.split == split))  # type: ignore[misc]
    for kind in sorted({q.kind for q in questions}):
        groups.append((f"kind={kind}", lambda q, kind=kind: q.kind == kind))  # type: ignore[misc]
    modes = list(results)
    from apps.search.backends import get_search_backend

    gist_weight = float(get_search_backend().options.get("GIST_WEIGHT", 0.0))
    print(f"\nretrieval quality: {len(questions)} questions, top {TOP}  (r@1 / r@10 / MRR)")
    print(f"  (hybrid includes the gist list at weight {gist_weight:g}; SEARCH_GIST_WEIGHT=0 leaves it out)")
    print(f"  {'group':<22}{'n':>4}  " + "".join(f"{mode:<22}" for mode in modes))
    for name, keep in groups:
        picked = [i for i, q in enumerate(questions) if keep(q)]
        cells = []
        for mode in modes:
            at1, at10, mrr = _metrics([results[mode].ranks[i] for i in picked])
            cells.append(f"{at1:.2f} / {at10:.2f} / {mrr:.2f}    ")
        print(f"  {name:<22}{len(picked):>4}  " + "".join(f"{c:<22}" for c in cells))
    print("  latency in process, one client (ms):")
    for mode in modes:
        p50, p95 = percentiles(results[mode].seconds)
        print(f"    {mode:<9} p50 {p50:6.1f}   p95 {p95:6.1f}")


# ---------------------------------------------------------------- HTTP load


def session_cookie(username: str) -> str:
    """A logged-in session for the bench user, made the way django.contrib.auth.login stores one."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    user = get_user_model().objects.get(username=username)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


@dataclass(slots=True)
class LoadResult:
    requests: int
    errors: int
    seconds: float
    latencies: list[float]
    first_error: str = ""


def http_load(
    base_url: str, cookie: str, queries: Sequence[str], *, mode: str, concurrency: int, duration: float
) -> LoadResult:
    """`concurrency` clients, each sending its next query as soon as the previous answer arrived."""
    latencies: list[float] = []
    errors = [0]
    first_error: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + duration
    max_requests = int(duration * 1000)  # a bound on the loop whatever the server does

    def client(offset: int) -> None:
        position = offset
        while time.monotonic() < stop_at:
            with lock:
                if len(latencies) + errors[0] >= max_requests:
                    return
            query = queries[position % len(queries)]
            position += 1
            url = f"{base_url}/api/search?" + urllib.parse.urlencode({"q": query, "mode": mode, "limit": 10})
            request = urllib.request.Request(url, headers={"Cookie": cookie})  # noqa: S310 (http on loopback)
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                    response.read()
                ok = True
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                ok = False
                with lock:
                    if not first_error:
                        first_error.append(str(exc))
            elapsed = time.perf_counter() - started
            with lock:
                if ok:
                    latencies.append(elapsed)
                else:
                    errors[0] += 1

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i * 7,)) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return LoadResult(
        requests=len(latencies),
        errors=errors[0],
        seconds=time.monotonic() - started,
        latencies=latencies,
        first_error=first_error[0] if first_error else "",
    )


def print_load(label: str, result: LoadResult) -> None:
    if not result.latencies:
        print(f"  {label:<28} no successful request ({result.errors} errors: {result.first_error})")
        return
    p50, p95 = percentiles(result.latencies)
    rate = result.requests / result.seconds
    errors = f", {result.errors} errors ({result.first_error})" if result.errors else ""
    print(
        f"  {label:<28} {rate:6.1f} req/s   p50 {p50:6.1f} ms   p95 {p95:6.1f} ms"
        f"   ({result.requests} requests{errors})"
    )


def wait_for_server(base_url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/api/health", timeout=2) as response:  # noqa: S310
                response.read()
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    raise RuntimeError(f"the server at {base_url} did not answer within {timeout:.0f}s")


def questions_as_queries(questions: Sequence[Question]) -> list[str]:
    return [q.text for q in questions]


def describe(questions: Sequence[Question]) -> str:
    kinds: dict[str, int] = {}
    for q in questions:
        kinds[q.kind] = kinds.get(q.kind, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))


__all__ = [
    "MODES",
    "LoadResult",
    "Question",
    "baseline_ranking",
    "describe",
    "evaluate",
    "http_load",
    "load_questions",
    "print_load",
    "questions_as_queries",
    "report",
    "resolve_relevant",
    "session_cookie",
    "wait_for_server",
]
