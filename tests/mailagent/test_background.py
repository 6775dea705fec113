"""`manage.py background`, what `manage.py serve` starts beside the web server (issue 40): the django-q2 cluster
with the mail watcher and the library watcher in threads of its main process, one Django process where there
were three (`qcluster`, `watch_mail`, `watch_library`, each ~115 MB RSS with Django and every app loaded).

Real processes throughout: Dovecot for IDLE, a library root on disk for watchdog, the ORM broker for a job.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from django.utils import timezone
from django_q.tasks import async_task, fetch

from apps.organization.models import Library, Suggestion
from tests.accounts.test_imap_mirror import connect, mail, synced
from tests.accounts.test_watch_mail import account_synced_since, stored_and_handled
from tests.fakes.dovecot import Mailbox, wait_until
from tests.organization.conftest import library, seeded_library, write  # noqa: F401 (fixtures)
from tests.services import REPO_ROOT, subprocess_env

pytestmark = pytest.mark.services


@pytest.mark.django_db(transaction=True)
def test_one_background_process_runs_the_cluster_the_mail_watch_and_the_library_watch(
    imap_mailbox: Mailbox,
    seeded_library: Library,  # noqa: F811 (the fixture imported above)
    user: Any,
) -> None:
    import psutil

    box = imap_mailbox
    account = connect(box, user)
    synced(account)
    started = timezone.now()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "background"],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # The cluster: its sentinel, pusher, monitor and workers are forked from this process, nothing else runs.
        deadline = time.monotonic() + 60
        children: list[Any] = []
        while time.monotonic() < deadline and len(children) < 4:
            children = psutil.Process(process.pid).children(recursive=True)
            time.sleep(0.2)
        assert len(children) >= 4, "the cluster did not start"
        own_command = psutil.Process(process.pid).cmdline()
        assert all(child.cmdline() == own_command for child in children), [c.cmdline() for c in children]
        task_id = async_task("math.floor", 2.5, sync=False)  # through the ORM broker to the cluster's worker
        assert wait_until(lambda: (task := fetch(task_id)) is not None and task.success, timeout=60, interval=0.2)
        assert fetch(task_id).result == 2

        # The mail watch (a thread): it syncs once before it holds IDLE, then a new mail arrives in seconds.
        assert wait_until(lambda: account_synced_since(account.pk, started), timeout=60)
        time.sleep(1)
        box.append("INBOX", mail(2))
        assert wait_until(lambda: stored_and_handled(account.pk, "m2@mirror.test"), timeout=60), "new mail not pushed"

        # The library watch (another thread): a file dropped into the inbox gets its suggestion.
        write(seeded_library.root_path, "inbox/boarding.txt", "SkyBridge Airlines boarding pass, gate and seat.")
        arrivals = Suggestion.objects.filter(file__library=seeded_library, file__path="inbox/boarding.txt")
        assert wait_until(arrivals.exists, timeout=30), "no suggestion from the library watch"
        assert len(psutil.Process(process.pid).children(recursive=True)) == len(children)  # still one tree
    finally:
        process.send_signal(signal.SIGINT)
        try:
            output, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            for child in psutil.Process(process.pid).children(recursive=True):
                child.kill()
            process.kill()
            output, _ = process.communicate()
    assert process.returncode == 0, output
    assert "background: the cluster and watch_mail, watch_library are running" in output
    assert "Q Cluster" in output
    assert "Traceback" not in output, output
    assert output.rstrip().endswith("background stopped"), output[-2000:]
