"""A new connection while keep-alive clients keep the web server busy: how long does a health probe wait?

    .venv/bin/python -m bench.fair_accept [--clients 12] [--seconds 20] [--processes 1] [--baseline REF]

Starts the real web server (mailagent/webserver.py, as `manage.py serve` does) on a fresh SQLite database,
runs `--clients` logged-in keep-alive clients that each send the next request (GET /api/filters) as soon
as the last one is answered, and opens a fresh connection to /api/health every 0.25 s, as a load
balancer's health check does. Prints the probes' latencies (p50, p95, max) and how many got no answer
within 60 s, and the keep-alive clients' throughput. With `--baseline REF` the same load runs first
against the web server of that git revision (checked out in a temporary worktree) and the two are
printed side by side.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBE_TIMEOUT = 60.0
PROBE_EVERY = 0.25


@dataclass
class Outcome:
    label: str
    probes: list[float] = field(default_factory=list)
    unanswered: int = 0
    client_requests: int = 0
    client_errors: int = 0
    seconds: float = 0.0


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(port: int, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the web server exited with {process.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/api/health")
            connection.getresponse().read()
            connection.close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError("the web server did not answer /api/health")


def _keep_alive_client(port: int, cookie: str, stop: threading.Event, outcome: Outcome, lock: threading.Lock) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PROBE_TIMEOUT)
    done = errors = 0
    while not stop.is_set():
        try:
            connection.request("GET", "/api/filters", headers={"Cookie": cookie})
            response = connection.getresponse()
            response.read()
            done += 1
            if response.status != 200:
                errors += 1
        except (OSError, http.client.HTTPException):
            errors += 1
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PROBE_TIMEOUT)
    connection.close()
    with lock:
        outcome.client_requests += done
        outcome.client_errors += errors


def _probe(port: int, outcome: Outcome, lock: threading.Lock) -> None:
    started = time.monotonic()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PROBE_TIMEOUT)
        connection.request("GET", "/api/health")
        response = connection.getresponse()
        response.read()
        connection.close()
        with lock:
            outcome.probes.append(time.monotonic() - started)
    except (OSError, http.client.HTTPException):
        with lock:
            outcome.unanswered += 1


def run_load(
    label: str, *, cwd: Path, env: dict[str, str], cookie: str, clients: int, seconds: float, processes: int
) -> Outcome:
    port = _free_port()
    command = [sys.executable, "-m", "mailagent.webserver", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--workers", str(processes)]
    server = subprocess.Popen(
        command, cwd=cwd, env={**env, "PYTHONPATH": str(cwd)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    outcome = Outcome(label)
    lock = threading.Lock()
    try:
        _wait_for(port, server)
        stop = threading.Event()
        workers = [
            threading.Thread(target=_keep_alive_client, args=(port, cookie, stop, outcome, lock))
            for _ in range(clients)
        ]
        for worker in workers:
            worker.start()
        time.sleep(1.0)  # the clients are connected and busy before the first probe
        probes: list[threading.Thread] = []
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            probe = threading.Thread(target=_probe, args=(port, outcome, lock))
            probe.start()
            probes.append(probe)
            time.sleep(PROBE_EVERY)
        stop.set()
        for thread in [*probes, *workers]:
            thread.join()
        outcome.seconds = time.monotonic() - started
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
    return outcome


def _row(outcome: Outcome) -> list[str]:
    probes = sorted(outcome.probes)
    if probes:
        p95 = probes[min(len(probes) - 1, int(len(probes) * 0.95))]
        cells = [f"{statistics.median(probes) * 1000:.0f}", f"{p95 * 1000:.0f}", f"{probes[-1] * 1000:.0f}"]
    else:
        cells = ["-", "-", "-"]
    return [
        outcome.label,
        str(len(probes) + outcome.unanswered),
        *cells,
        str(outcome.unanswered),
        f"{outcome.client_requests / max(outcome.seconds, 0.001):.0f}",
        str(outcome.client_errors),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--baseline", help="a git revision whose web server runs the same load first")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-fair-accept-"))
    baseline_dir: Path | None = None
    try:
        from bench.search import setup_django
        from bench.search_eval import session_cookie

        setup_django(workdir, postgres=False)
        from django.contrib.auth import get_user_model

        get_user_model().objects.create_user(username="bench", email="bench@example.com", password=None)
        cookie = session_cookie("bench")
        env = {**os.environ, "LOG_LEVEL": "WARNING", "DEBUG": "1"}
        outcomes: list[Outcome] = []
        load = {"env": env, "cookie": cookie, "clients": args.clients, "seconds": args.seconds}
        if args.baseline:
            baseline_dir = workdir / "baseline"
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "add", "--detach", str(baseline_dir), args.baseline],
                check=True,
                capture_output=True,
            )
            outcomes.append(run_load(f"baseline {args.baseline}", cwd=baseline_dir, processes=args.processes, **load))
        outcomes.append(run_load("this tree", cwd=REPO, processes=args.processes, **load))
    finally:
        if baseline_dir is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(baseline_dir)], check=False)
        shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"{args.clients} keep-alive clients (GET /api/filters back to back), a fresh /api/health connection every "
        f"{PROBE_EVERY} s for {args.seconds:.0f} s, {args.processes} web process(es)"
    )
    header = ["server", "probes", "p50 ms", "p95 ms", "max ms", f"no answer in {PROBE_TIMEOUT:.0f} s", "client req/s"]
    header.append("client errors")
    rows = [header, *(_row(outcome) for outcome in outcomes)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
