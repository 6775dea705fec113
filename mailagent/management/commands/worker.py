"""`manage.py worker`: the django-q2 cluster (`qcluster`) with a bounded stop, for production process managers.

On SIGTERM or Ctrl-C, `qcluster` alone waits for every busy worker to finish its task, however long (a probe saw
one ignore SIGTERM for 35 minutes). This command runs it under mailagent/supervisor.py, the same supervisor
`manage.py serve` becomes: the cluster is asked to stop, and after MAILAGENT_STOP_GRACE_SECONDS (default 10)
it and every process it started are killed. The interrupted task is not lost: its run or job is requeued by
the sweepers on the next start, as after a crash.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from mailagent.server import become_supervisor


class Command(BaseCommand):
    help = "Run the background-job cluster (qcluster); on SIGTERM or Ctrl-C it stops within the grace period."

    def handle(self, *args: Any, **options: Any) -> None:
        manage_py = str(Path(settings.BASE_DIR) / "manage.py")
        commands = {"worker": [sys.executable, manage_py, "qcluster"]}
        become_supervisor(commands, banner="mailagent worker started (SIGTERM or Ctrl-C stops it)")
