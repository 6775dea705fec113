"""IMAP sync benchmark: incremental sync after 1% of a big mailbox changed, beside a full re-sync and mbsync.

    PYTHONPATH=. .venv/bin/python bench/sync.py [--messages 50000] [--seed 33]

A throwaway Dovecot (tests/fakes/dovecot.py) gets N Enron messages (../shared/data, reused cyclically with a
fresh Message-ID past the corpus' 44,755) in INBOX and five other folders, one nested with a non-ASCII name,
loaded with MULTIAPPEND (not timed). Then, each timed:

1. mailagent initial sync of a new IMAP account (`sync_account`, a fresh SQLite database; full-text indexing
   and routing run in the storing process, as in production);
2. mbsync (Debian isync) initial pull of the same mailbox into a Maildir;
3. 1% of the messages change on the server: \\Seen or \\Flagged toggled on 0.4%, 0.3% moved to another folder,
   0.3% expunged, and one folder renamed (not timed);
4. mailagent incremental sync and mbsync incremental pull after those same changes;
5. mailagent full re-sync: a second, fresh account on the same mailbox syncing from nothing.

Bytes are what Dovecot reports per IMAP session on logout (`in=` from the client, `out=` to the client, in
its log). Nothing here asserts a timing: the run warns if the mirror differs from `doveadm fetch`, or if the
incremental sync downloaded any body (created > 0) although only flags, moves, expunges and a rename happened.
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import os
import pstats
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imapclient import imap_utf7

REPO_ROOT = Path(__file__).resolve().parent.parent
ENRON = REPO_ROOT.parent / "shared" / "data" / "enron" / "enron-inbox.tar.gz"

# (folder, share of the messages). Archive also carries SPECIAL-USE \Archive (Dovecot auto-creates it).
FOLDERS = [
    ("INBOX", 0.40),
    ("Projects", 0.15),
    ("Projects/Ünïcode", 0.10),
    ("Clients", 0.15),
    ("Archive", 0.12),
    ("Travel", 0.08),
]
RENAME = ("Travel", "Reisen/Übersee")
FLAG_SHARE, MOVE_SHARE, EXPUNGE_SHARE = 0.004, 0.003, 0.003
APPEND_CHUNK = 200
MESSAGE_ID = re.compile(rb"^message-id:[^\n]*\n(?:[ \t][^\n]*\n)*", re.IGNORECASE | re.MULTILINE)
SESSION_BYTES = re.compile(r"\bin=(\d+) out=(\d+)")


@dataclass
class Row:
    name: str
    seconds: float
    bytes_in: int
    bytes_out: int
    sessions: int


# -- the mailbox ------------------------------------------------------------------------------------------


def enron_messages(workdir: Path, count: int) -> Iterator[bytes]:
    """`count` messages with CRLF line ends; past the corpus, the same ones again with a fresh Message-ID."""
    with tarfile.open(ENRON, "r:gz") as archive:
        # In archive order: a gzip stream cannot seek back, so any other order decompresses it again per file.
        members = [m for m in archive.getmembers() if m.isfile()]
        archive.extractall(workdir / "enron", members=members, filter="data")
    paths = sorted(workdir / "enron" / member.name for member in members)
    for index in range(count):
        raw = paths[index % len(paths)].read_bytes().replace(b"\r\n", b"\n")
        cycle = index // len(paths)
        if cycle:
            head, sep, body = raw.partition(b"\n\n")
            head = MESSAGE_ID.sub(b"", head + b"\n").rstrip(b"\n")
            fresh = f"Message-ID: <bench-{cycle}-{index}@sync.bench>".encode()
            raw = fresh + b"\n" + head + (sep or b"\n\n") + body
        yield raw.replace(b"\n", b"\r\n")


def load_mailbox(mailbox: Any, workdir: Path, count: int, rng: random.Random) -> dict[str, int]:
    """MULTIAPPEND every message to its folder, about 60% of them \\Seen and 3% \\Flagged."""
    for name, _ in FOLDERS:
        mailbox.create_folder(name)
    bounds: list[tuple[str, int]] = []
    total = 0.0
    for name, share in FOLDERS:
        total += share
        bounds.append((name, round(total * count)))
    bounds[-1] = (bounds[-1][0], count)
    pending: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in FOLDERS}
    counts = dict.fromkeys(pending, 0)
    with mailbox.client() as client:

        def flush(folder: str) -> None:
            if pending[folder]:
                client.multiappend(folder, pending[folder])
                counts[folder] += len(pending[folder])
                pending[folder] = []

        for index, raw in enumerate(enron_messages(workdir, count)):
            folder = next(name for name, bound in bounds if index < bound)
            flags = [b"\\Seen"] if rng.random() < 0.6 else []
            if rng.random() < 0.03:
                flags.append(b"\\Flagged")
            pending[folder].append({"msg": raw, "flags": flags})
            if len(pending[folder]) >= APPEND_CHUNK:
                flush(folder)
        for name in pending:
            flush(name)
    return counts


def apply_changes(mailbox: Any, count: int, rng: random.Random) -> dict[str, int]:
    """1% of the messages: flags toggled, moved, expunged (disjoint sets), then one folder renamed."""
    with mailbox.client() as client:
        places: list[tuple[str, int]] = []
        for name, _ in FOLDERS:
            client.select_folder(name, readonly=True)
            places += [(name, int(uid)) for uid in client.search(["ALL"])]
    wanted = [max(1, round(count * share)) for share in (FLAG_SHARE, MOVE_SHARE, EXPUNGE_SHARE)]
    picked = rng.sample(places, sum(wanted))
    flagged, moved, expunged = (
        picked[: wanted[0]],
        picked[wanted[0] : wanted[0] + wanted[1]],
        picked[wanted[0] + wanted[1] :],
    )
    folders = [name for name, _ in FOLDERS]
    with mailbox.client() as client:
        for folder in folders:
            mine = [uid for name, uid in flagged if name == folder]
            if mine:
                client.select_folder(folder)
                half = len(mine) // 2
                # Half read/unread toggles, half flag toggles: both directions of both flags the mirror keeps.
                seen = {int(uid) for uid in client.search(["SEEN"])}
                marked = {int(uid) for uid in client.search(["FLAGGED"])}
                for uid in mine[:half]:
                    (client.remove_flags if uid in seen else client.add_flags)([uid], [b"\\Seen"])
                for uid in mine[half:]:
                    (client.remove_flags if uid in marked else client.add_flags)([uid], [b"\\Flagged"])
        for folder in folders:
            mine = [uid for name, uid in moved if name == folder]
            if mine:
                client.select_folder(folder)
                # Each message to another folder (the rename target included: it moves before the rename).
                others = [name for name in folders if name != folder]
                for index, target in enumerate(others):
                    chunk = mine[index :: len(others)]
                    if chunk:
                        client.move(chunk, target)
        for folder in folders:
            mine = [uid for name, uid in expunged if name == folder]
            if mine:
                client.select_folder(folder)
                client.add_flags(mine, [b"\\Deleted"])
                client.uid_expunge(mine)
        client.unselect_folder()
        client.rename_folder(*RENAME)
    return {"flags": len(flagged), "moves": len(moved), "expunges": len(expunged), "renames": 1}


# -- bytes from Dovecot's log -------------------------------------------------------------------------------


class SessionLog:
    """Sums `in=… out=…` of the IMAP sessions of one user that ended since `mark()`."""

    def __init__(self, path: Path, username: str) -> None:
        self.path = path
        self.prefix = f"imap({username})"
        self.offset = 0

    def mark(self) -> None:
        """Start counting here, once every session that logged in so far has logged its end."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            text = self.path.read_text(errors="replace") if self.path.exists() else ""
            logins = text.count(f"Login: user=<{self.prefix[5:-1]}>")
            ends = sum(1 for line in text.splitlines() if self.prefix in line and "Disconnected" in line)
            if ends >= logins:
                break
            time.sleep(0.1)
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def totals(self, expected_sessions: int) -> tuple[int, int, int]:
        # Dovecot's log process writes a moment after the logout: wait for the sessions we know ended.
        deadline = time.monotonic() + 10
        while True:
            with self.path.open("rb") as log:
                log.seek(self.offset)
                text = log.read().decode("utf-8", "replace")
            found = [
                SESSION_BYTES.search(line)
                for line in text.splitlines()
                if self.prefix in line and "Disconnected" in line
            ]
            hits = [match for match in found if match]
            if len(hits) >= expected_sessions or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        return sum(int(m.group(1)) for m in hits), sum(int(m.group(2)) for m in hits), len(hits)


def measured(name: str, log: SessionLog, run: Callable[[], Any]) -> tuple[Row, Any]:
    log.mark()
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    bytes_in, bytes_out, sessions = log.totals(expected_sessions=1)
    print(f"  {name}: {seconds:.1f}s, {bytes_out / 1e6:.2f} MB fetched in {sessions} IMAP session(s)", flush=True)
    return Row(name, seconds, bytes_in, bytes_out, sessions), result


# -- mailagent ----------------------------------------------------------------------------------------------


def setup_django(workdir: Path) -> None:
    os.environ["DATA_DIR"] = str(workdir / "data")
    os.environ.setdefault("VX_MAILAGENT_KEY", "7e" * 32)
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    import django

    django.setup()
    # One "Enqueued" line per stored batch (the embedding backfill, run later by a worker) buries the table.
    logging.getLogger("django-q").setLevel(logging.WARNING)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def mailagent_account(mailbox: Any, owner: Any, name: str) -> int:
    from apps.accounts.actions import create_imap_account

    account = create_imap_account(
        owner=owner,
        name=name,
        address=mailbox.username,
        host="127.0.0.1",
        port=mailbox.server.port,
        security="none",
        username=mailbox.username,
        password=mailbox.password,
    )
    return int(account.pk)


def mailagent_sync(account_id: int) -> Any:
    from apps.accounts.sync import sync_account

    outcome = sync_account(account_id)
    if outcome.status != "ok":
        raise RuntimeError(f"sync of account {account_id} failed: {outcome.error_message}")
    return outcome


def mirror_differences(mailbox: Any, account_id: int) -> list[str]:
    """Folders whose (Message-ID, \\Seen, \\Flagged) rows differ from `doveadm fetch`."""
    from apps.accounts.models import MessageLocation

    local: dict[str, list[tuple[str, bool, bool]]] = {}
    for folder, message_id, seen, flagged in MessageLocation.objects.filter(account_id=account_id).values_list(
        "folder__name", "message__message_id", "seen", "flagged"
    ):
        local.setdefault(folder, []).append((message_id, seen, flagged))
    server = mailbox.doveadm_state()
    problems = []
    for folder in sorted(set(local) | set(server)):
        mine, theirs = sorted(local.get(folder, [])), server.get(folder, [])
        if mine != theirs:
            extra = len(set(mine) - set(theirs))
            missing = len(set(theirs) - set(mine))
            problems.append(
                f"{folder}: {len(mine)} here, {len(theirs)} on the server ({extra} extra, {missing} missing)"
            )
    return problems


# -- mbsync -------------------------------------------------------------------------------------------------


def mbsync_config(workdir: Path, mailbox: Any) -> Path:
    near = workdir / "mbsync-maildir"
    near.mkdir()
    config = workdir / "mbsyncrc"
    config.write_text(
        f"""\
IMAPAccount bench
Host 127.0.0.1
Port {mailbox.server.port}
User {mailbox.username}
Pass {mailbox.password}
SSLType None
AuthMechs LOGIN

IMAPStore far
Account bench

MaildirStore near
Path {near}/
Inbox {near}/INBOX
SubFolders Verbatim

Channel bench
Far :far:
Near :near:
Patterns *
Create Near
Remove Near
Expunge Near
Sync Pull
SyncState *
"""
    )
    return config


def run_mbsync(config: Path) -> str:
    result = subprocess.run(["mbsync", "-c", str(config), "-a"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"mbsync failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return (result.stdout + result.stderr).strip()


def maildir_folders(root: Path) -> dict[str, int]:
    """Messages per Maildir folder (its path under root, as mbsync's SubFolders Verbatim lays them out)."""
    counts: dict[str, int] = {}
    for current, _, files in os.walk(root):
        here = Path(current)
        if here.name in {"cur", "new"}:
            # mbsync 1.4 keeps the server's modified UTF-7 in directory names; doveadm prints UTF-8.
            name = "/".join(imap_utf7.decode(part.encode()) for part in here.parent.relative_to(root).parts)
            counts[name] = counts.get(name, 0) + len(files)
    return counts


def mbsync_differences(root: Path, mailbox: Any) -> list[str]:
    server = {folder: len(rows) for folder, rows in mailbox.doveadm_state().items()}
    near = maildir_folders(root)
    return [
        f"{folder}: {near.get(folder, 0)} in the Maildir, {server.get(folder, 0)} on the server"
        for folder in sorted(set(server) | set(near))
        if near.get(folder, 0) != server.get(folder, 0)
    ]


def report_mbsync(said: str, root: Path, mailbox: Any) -> None:
    for line in said.splitlines()[-3:]:
        print(f"    mbsync: {line}")
    for line in mbsync_differences(root, mailbox):
        print(f"    mbsync Maildir differs: {line}")


# -- report -------------------------------------------------------------------------------------------------


def print_table(rows: list[Row]) -> None:
    print()
    print(f"{'run':<36} {'seconds':>9} {'MB fetched':>11} {'MB sent':>9} {'sessions':>9}")
    for row in rows:
        print(
            f"{row.name:<36} {row.seconds:>9.1f} {row.bytes_out / 1e6:>11.2f} {row.bytes_in / 1e6:>9.2f} "
            f"{row.sessions:>9}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=50_000, help="Messages in the mailbox (default 50000).")
    parser.add_argument("--seed", type=int, default=33, help="Seed for flags on append and the 1%% change.")
    parser.add_argument("--profile", action="store_true", help="cProfile the incremental sync (top 30).")
    parser.add_argument("--skip-mbsync", action="store_true", help="Only mailagent (no isync installed).")
    args = parser.parse_args()
    if not ENRON.exists():
        print(f"{ENRON} not found: this benchmark needs the team's ../shared/data")
        return 2
    use_mbsync = not args.skip_mbsync
    if use_mbsync and shutil.which("mbsync") is None:
        print("mbsync: not installed (apt-get install isync); run with --skip-mbsync to time mailagent alone")
        return 2
    sys.path.insert(0, str(REPO_ROOT))
    from tests.fakes.dovecot import dovecot_server

    rng = random.Random(args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="mailagent-bench-sync-"))
    rows: list[Row] = []
    try:
        setup_django(workdir)
        from django.contrib.auth import get_user_model

        owner = get_user_model().objects.create_user(username="bench", email="bench@example.com")
        with dovecot_server() as server:
            mailbox = server.add_user()
            log = SessionLog(server.base / "dovecot.log", mailbox.username)
            print(f"loading {args.messages} messages with MULTIAPPEND …", flush=True)
            started = time.perf_counter()
            counts = load_mailbox(mailbox, workdir, args.messages, rng)
            print(f"  {counts} in {time.perf_counter() - started:.0f}s (not timed)", flush=True)

            first = mailagent_account(mailbox, owner, "bench")
            row, outcome = measured("mailagent initial", log, lambda: mailagent_sync(first))
            rows.append(row)
            print(
                f"    created {outcome.created}, duplicates {outcome.duplicates}, parse errors {outcome.parse_errors}"
            )
            if use_mbsync:
                config = mbsync_config(workdir, mailbox)
                row, said = measured("mbsync initial", log, lambda: run_mbsync(config))
                rows.append(row)
                report_mbsync(said, workdir / "mbsync-maildir", mailbox)

            changes = apply_changes(mailbox, args.messages, rng)
            print(f"changed on the server: {changes} ({sum(changes.values()) - 1} messages)", flush=True)

            profiler = cProfile.Profile() if args.profile else None
            row, incremental = measured(
                "mailagent incremental after 1%",
                log,
                lambda: profiler.runcall(mailagent_sync, first) if profiler else mailagent_sync(first),
            )
            if profiler:
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
            rows.append(row)
            if use_mbsync:
                row, said = measured("mbsync incremental after 1%", log, lambda: run_mbsync(config))
                rows.append(row)
                report_mbsync(said, workdir / "mbsync-maildir", mailbox)

            second = mailagent_account(mailbox, owner, "bench-full")
            row, full = measured("mailagent full re-sync", log, lambda: mailagent_sync(second))
            rows.append(row)

            print_table(rows)
            by_name = {row.name: row for row in rows}
            if use_mbsync:
                ours, theirs = by_name["mailagent incremental after 1%"], by_name["mbsync incremental after 1%"]
                print(
                    f"\nmailagent incremental / mbsync incremental: {ours.seconds / theirs.seconds:.2f}x the time, "
                    f"{ours.bytes_out / max(1, theirs.bytes_out):.2f}x the bytes fetched"
                )
            ours, fresh = by_name["mailagent incremental after 1%"], by_name["mailagent full re-sync"]
            print(
                f"mailagent incremental / full re-sync: {ours.seconds / fresh.seconds:.3f}x the time, "
                f"{ours.bytes_out / max(1, fresh.bytes_out):.4f}x the bytes fetched"
            )
            print(
                f"\nincremental SyncOutcome: created {incremental.created}, located {incremental.located}, "
                f"removed {incremental.removed}, deleted {incremental.deleted}, duplicates {incremental.duplicates}, "
                f"parse errors {incremental.parse_errors}"
            )
            print(f"full re-sync SyncOutcome: created {full.created}, duplicates {full.duplicates}")
            if incremental.created:
                print(f"WARNING: the incremental sync downloaded {incremental.created} bodies for moves/renames")
            for account_id, label in ((first, "incremental"), (second, "full re-sync")):
                problems = mirror_differences(mailbox, account_id)
                if problems:
                    print(f"WARNING: the {label} mirror differs from doveadm fetch:")
                    for line in problems:
                        print(f"  {line}")
                else:
                    print(f"{label}: every folder's Message-IDs, \\Seen and \\Flagged equal doveadm fetch")
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
