"""The library watch: a watchdog observer on every library root, run by its own long-lived command
(`manage.py watch_library`, which `make run` / `manage.py serve` start next to `watch_mail`). Events are
debounced (a file being written fires many) and handed to the same intake the scan uses, so a file seen by
both is still handled once. The scheduled scan (every few minutes) catches anything a watch missed: events
lost while the watcher was down, roots on filesystems without inotify. Libraries whose root is not allowed
(roots.library_problem) are not watched."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import close_old_connections

from apps.organization.models import FileSource, Library
from apps.organization.roots import library_problem

logger = logging.getLogger(__name__)
SETTLE_SECONDS = 1.0
RESCAN_ROOTS_SECONDS = 10.0


class LibraryWatch:
    """Watches the given library roots; `pump()` ingests files whose events have settled."""

    def __init__(self, *, settle_seconds: float = SETTLE_SECONDS) -> None:
        from watchdog.observers import Observer

        self.settle_seconds = settle_seconds
        self.observer: Any = Observer()
        self.watched: dict[int, tuple[str, Any]] = {}
        self.pending: dict[Path, tuple[int, float]] = {}
        self.lock = threading.Lock()
        self.refused: set[tuple[int, str]] = set()  # (library, root) pairs already logged as not watched

    def _handler(self, library_id: int) -> Any:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler

        watch = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.is_directory or event.event_type in ("deleted", "opened", "closed_no_write"):
                    return
                raw = event.dest_path if event.event_type == "moved" else event.src_path
                path = Path(raw if isinstance(raw, str) else raw.decode())
                with watch.lock:
                    watch.pending[path] = (library_id, time.monotonic())

        return Handler()

    def sync_roots(self) -> None:
        """Watch every library's root (new libraries, changed roots); drop watches of vanished ones."""
        libraries: dict[int, str] = {}
        for lib in Library.objects.select_related("owner"):
            problem = library_problem(lib)  # a root outside the allowed folders is not watched (roots.py)
            if not problem:
                libraries[lib.pk] = lib.root
            elif (lib.pk, lib.root) not in self.refused:
                self.refused.add((lib.pk, lib.root))
                logger.warning("organization: not watching library %s of user %s: %s", lib.pk, lib.owner_id, problem)
        for library_id, (root, handle) in list(self.watched.items()):
            if libraries.get(library_id) != root:
                self.observer.unschedule(handle)
                del self.watched[library_id]
        for library_id, root in libraries.items():
            if library_id in self.watched or not Path(root).is_dir():
                continue
            handle = self.observer.schedule(self._handler(library_id), root, recursive=True)
            self.watched[library_id] = (root, handle)

    def start(self) -> None:
        self.sync_roots()
        self.observer.start()

    def stop(self) -> None:
        self.observer.stop()
        self.observer.join(timeout=5)

    def pump(self, *, now: float | None = None) -> int:
        """Ingest files whose last event is older than the settle time; returns how many were handled."""
        now = time.monotonic() if now is None else now
        with self.lock:
            ready = [(p, lib) for p, (lib, seen) in self.pending.items() if now - seen >= self.settle_seconds]
            for path, _lib in ready:
                del self.pending[path]
        if not ready:
            return 0
        # Imported with the first file: ingesting loads the classifier (numpy, joblib: ~30 MB), which a watch
        # that has seen no file yet (most of the time, in the background process's main thread) does not need.
        from apps.organization import actions

        handled = 0
        for path, library_id in ready:
            library = Library.objects.select_related("owner").filter(pk=library_id).first()
            if library is None or not path.is_file():
                continue
            try:
                actions.ingest_path(library=library, path=path, source=FileSource.WATCH)
                handled += 1
            except Exception:
                logger.exception("organization: watch could not ingest %s", path)
        return handled


def run_library_watch(
    stop: threading.Event, *, settle_seconds: float = SETTLE_SECONDS, on_ready: Callable[[int], None] | None = None
) -> None:
    """Watch until `stop` is set (the watch_library command's main loop, in its main thread); `on_ready` is
    told how many roots are watched once the observer runs."""
    watch = LibraryWatch(settle_seconds=settle_seconds)
    watch.start()
    logger.info("organization: watching %d library roots", len(watch.watched))
    if on_ready is not None:
        on_ready(len(watch.watched))
    last_roots = time.monotonic()
    try:
        while not stop.wait(0.5):
            close_old_connections()
            watch.pump()
            if time.monotonic() - last_roots > RESCAN_ROOTS_SECONDS:
                watch.sync_roots()
                last_roots = time.monotonic()
    finally:
        watch.stop()
        close_old_connections()
