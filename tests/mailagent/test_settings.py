from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from mailagent import settings as settings_module


def test_env_helpers_parse_and_reject(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    assert settings_module.env_bool("X_BOOL") is True
    assert settings_module.env_int("X_INT", 1) == 42
    assert settings_module.env_list("X_LIST", []) == ["a", "b", "c"]
    assert settings_module.env_bool("X_MISSING", default=True) is True
    monkeypatch.setenv("X_BOOL", "maybe")
    with pytest.raises(ValueError, match="X_BOOL must be a boolean"):
        settings_module.env_bool("X_BOOL")
    monkeypatch.setenv("X_INT", "many")
    with pytest.raises(ValueError, match="X_INT must be an integer"):
        settings_module.env_int("X_INT", 1)


def test_secret_key_is_generated_once_and_persisted() -> None:
    key_file = settings.DATA_DIR / "secret_key"
    assert key_file.read_text().strip() == settings.SECRET_KEY
    assert len(settings.SECRET_KEY) >= 50
    assert settings_module._persistent_secret_key() == settings.SECRET_KEY
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"


@pytest.mark.django_db
def test_database_is_configured_for_its_vendor() -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA journal_mode")
            assert cursor.fetchone()[0] == "wal"
            cursor.execute("PRAGMA busy_timeout")
            assert cursor.fetchone()[0] >= 30000
            assert connection.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
        else:
            assert connection.vendor == "postgresql"
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
            assert row is not None, "the pgvector extension must be created by migrations"
            cursor.execute("SELECT '[1,2,3]'::vector <=> '[1,2,4]'::vector")
            assert 0 < cursor.fetchone()[0] < 0.1


def test_without_redis_the_orm_broker_and_in_memory_layer_are_used() -> None:
    assert settings.REDIS_URL == ""
    assert settings.Q_CLUSTER["orm"] == "default"
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"


def test_redis_url_switches_broker_and_channel_layer(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    from tests.services import REPO_ROOT

    code = (
        "from django.conf import settings;"
        "print(settings.Q_CLUSTER.get('redis'), settings.Q_CLUSTER.get('orm'),"
        " settings.CHANNEL_LAYERS['default']['BACKEND'])"
    )
    env = dict(os.environ, REDIS_URL="redis://127.0.0.1:6399/3", DATA_DIR=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["redis://127.0.0.1:6399/3", "None", "channels_redis.core.RedisChannelLayer"]
