from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.dovecot import DovecotServer, Mailbox, dovecot_server


@pytest.fixture(scope="session")
def dovecot() -> Iterator[DovecotServer]:
    """One real Dovecot for the session; every test takes its own user (see `imap_mailbox`)."""
    with dovecot_server() as server:
        yield server


@pytest.fixture
def imap_mailbox(dovecot: DovecotServer) -> Mailbox:
    return dovecot.add_user()
