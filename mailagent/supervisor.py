"""What `manage.py serve` becomes once it has done its Django work: a process that starts the web server, the
cluster and the watchers, and stops them together.

`serve` replaces itself with this script (os.execv, same process id, same terminal), so the process that
only waits for its children holds the standard library alone (~10 MB) instead of Django and every app
(~100 MB). It must import nothing but the standard library: it runs as a plain script, not as part of the
project.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

STOP_GRACE_SECONDS = 10


def stop_grace_seconds() -> float:
    """How long the children get to stop by themselves (MAILAGENT_STOP_GRACE_SECONDS, default 10)."""
    try:
        return max(0.5, float(os.environ.get("MAILAGENT_STOP_GRACE_SECONDS", STOP_GRACE_SECONDS)))
    except ValueError:
        return float(STOP_GRACE_SECONDS)


def supervise(commands: dict[str, list[str]], *, banner: str) -> int:
    """Start every command, print `banner`, wait for Ctrl-C (or SIGTERM, or a child's exit), stop them all.
    Returns the exit status: 0 after Ctrl-C, else that of the child that exited first (1 if it was 0)."""
    children: dict[str, subprocess.Popen[bytes]] = {}
    stopping = False

    def request_stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, request_stop)
    exit_code = 0
    try:
        for name, command in commands.items():
            # Each child leads its own process group, so that stopping it reaches everything it started
            # (the cluster's worker processes, uvicorn's workers), not only the child itself.
            children[name] = subprocess.Popen(command, start_new_session=True)
        print(banner, flush=True)
        while not stopping:
            for name, child in children.items():
                code = child.poll()
                if code is not None:
                    print(f"{name} exited with status {code}; stopping everything", file=sys.stderr, flush=True)
                    exit_code = code or 1
                    stopping = True
                    break
            time.sleep(0.2)
    finally:
        stop(children)
    return exit_code


def stop(children: dict[str, subprocess.Popen[bytes]]) -> None:
    for child in children.values():
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
    grace = stop_grace_seconds()
    deadline = time.monotonic() + grace
    for name, child in children.items():
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            # A busy or stuck worker (a long task, a child that ignores signals) must not outlive `serve`:
            # the interrupted work is requeued by the sweeper on the next start.
            print(
                f"{name} did not stop in {grace:g}s; killing it and the processes it started",
                file=sys.stderr,
                flush=True,
            )
        _kill_process_group(child.pid)
        child.wait()
    print("stopped", flush=True)


def _kill_process_group(pgid: int) -> None:
    """SIGKILL whatever is left of a child's process group (nothing, when it stopped cleanly)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def main(argv: list[str]) -> int:
    """argv[1]: JSON {"commands": {name: argv list}, "banner": str}, as `manage.py serve` passes it."""
    spec = json.loads(argv[1])
    return supervise({str(k): [str(a) for a in v] for k, v in spec["commands"].items()}, banner=str(spec["banner"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
