"""The library watch in the process that ships it: `manage.py watch_library` (started by `manage.py serve`)
picks up a file dropped into the inbox and the suggestion appears within seconds (issue 32, item 6/7: in
the worker thread it failed on every file with "can't register atexit after shutdown")."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

from apps.organization.models import Library, LibraryFile, Suggestion
from tests.organization.conftest import write
from tests.services import REPO_ROOT, subprocess_env

DEADLINE_SECONDS = 20  # the process start (Django, watchdog) included


def test_a_file_dropped_into_the_inbox_is_suggested_by_the_watch_library_process(
    transactional_db: Any, seeded_library: Library
) -> None:
    process = subprocess.Popen(
        [sys.executable, "manage.py", "watch_library", "--settle-seconds", "0.3"],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # printed once the observer runs
        assert "watching 1 library roots" in line, line + (process.stderr.read() if process.stderr else "")
        dropped = time.monotonic()
        write(seeded_library.root_path, "inbox/boarding.txt", "SkyBridge Airlines boarding pass, gate and seat.")
        suggestion = None
        arrivals = Suggestion.objects.filter(file__library=seeded_library, file__path="inbox/boarding.txt")
        while suggestion is None and time.monotonic() - dropped < DEADLINE_SECONDS:
            time.sleep(0.2)
            suggestion = arrivals.first()
        waited = time.monotonic() - dropped
        print(f"watch_library: suggestion {waited:.1f} s after the file was written")
        assert suggestion is not None, "no suggestion from the watch process"
        assert suggestion.target_folder == "travel" or "travel" in [a["folder"] for a in suggestion.alternatives]
        assert LibraryFile.objects.get(pk=suggestion.file_id).source == "watch"
    finally:
        process.send_signal(signal.SIGTERM)
        _out, errors = process.communicate(timeout=15)
    assert process.returncode == 0, errors
    assert "Traceback" not in errors and "atexit" not in errors, errors
