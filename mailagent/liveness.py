"""Is the process that wrote a lease still alive? Leases (the account sync lock, Ask runs) record
`process_identity()`; `holder_is_dead()` answers True only when that is certain: the holder ran on this
machine (same host name) and its process is gone, is a zombie, is another process reusing the pid, or
belongs to an earlier boot. A holder on another machine is never declared dead here; its lease expires."""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path

_SEP = "|"


@cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:36]
    except OSError:
        return ""


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (which may hold spaces); None if no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return []
    return raw.rsplit(")", 1)[-1].split()


def _start_ticks(pid: int) -> str:
    fields = _stat_fields(pid)
    return fields[19] if fields and len(fields) > 19 else ""


def process_identity(pid: int | None = None) -> str:
    """ "host|boot id|pid|start time in clock ticks" of this (or the given) process."""
    pid = os.getpid() if pid is None else pid
    return _SEP.join([socket.gethostname()[:100], _boot_id(), str(pid), _start_ticks(pid)])


def holder_is_dead(identity: str) -> bool:
    parts = identity.split(_SEP)
    if len(parts) != 4 or not parts[2].isdigit():
        return False
    host, boot, pid_text, started = parts
    if host != socket.gethostname()[:100]:
        return False
    if boot and _boot_id() and boot != _boot_id():
        return True  # written before this machine last booted
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # exists, owned by another user
    fields = _stat_fields(pid)
    if fields is None:
        return True
    if fields and fields[0] == "Z":
        return True  # killed, not yet reaped by its parent
    return bool(started) and bool(fields) and len(fields) > 19 and fields[19] != started
