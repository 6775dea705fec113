"""ApiConfig moved from orchestration to apps.llm keeping its table: a database migrated before the move keeps
its configs, their encrypted keys (still decryptable), the foreign keys of directors, Ask and organization
settings, and the permissions given on the model. Backwards too. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.ask.models import AskSettings
from apps.llm.models import ApiConfig
from apps.orchestration.models import Director
from apps.organization.models import OrganizationSettings
from mailagent.crypto import reveal

BEFORE_THE_MOVE = [
    ("orchestration", "0005_google_approvals_send_updates"),
    ("ask", "0006_intent_choose"),
    ("organization", "0004_guideline_proposal_llm"),
]


@pytest.mark.django_db(transaction=True)
def test_api_configs_stored_before_the_move_stay_whole(user: Any) -> None:
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate([("llm", None)])  # unapplies the move in every app that followed it
        around = [node for node in latest if node[0] in {"auth", "contenttypes"}]
        old = executor.loader.project_state([*BEFORE_THE_MOVE, *around]).apps
        old_config = old.get_model("orchestration", "ApiConfig")
        config = old_config.objects.create(owner_id=user.pk, name="Work", model="m", api_key="sk-stored-before")
        old.get_model("orchestration", "Director").objects.create(owner_id=user.pk, name="d", api_config=config)
        old.get_model("ask", "AskSettings").objects.create(owner_id=user.pk, api_config=config)
        old.get_model("organization", "OrganizationSettings").objects.create(owner_id=user.pk, api_config=config)
        content_type = old.get_model("contenttypes", "ContentType").objects.get(model="apiconfig")
        assert content_type.app_label == "orchestration"
        permission = old.get_model("auth", "Permission").objects.get(
            content_type=content_type, codename="change_apiconfig"
        )
        old.get_model(get_user_model()._meta.label).objects.get(pk=user.pk).user_permissions.add(permission)
        MigrationExecutor(connection).migrate(latest)
    finally:
        MigrationExecutor(connection).migrate(latest)
        ContentType.objects.clear_cache()

    moved = ApiConfig.objects.get(pk=config.pk)
    assert reveal(moved.api_key) == "sk-stored-before"  # sealed as orchestration.apiconfig, still readable
    assert Director.objects.get(owner=user).api_config == moved
    assert AskSettings.objects.get(owner=user).api_config == moved
    assert OrganizationSettings.objects.get(owner=user).api_config == moved
    assert ContentType.objects.get_for_model(ApiConfig).app_label == "llm"
    assert get_user_model().objects.get(pk=user.pk).has_perm("llm.change_apiconfig")
