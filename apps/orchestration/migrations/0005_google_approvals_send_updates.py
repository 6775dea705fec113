"""Google calendar approvals stored before this migration hold sendUpdates=none and relied on approve() to
switch it to "all"; approve() now sends the stored request exactly as shown, so undecided ones are updated
to say what approving sends."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def store_what_approval_sends(apps: Any, schema_editor: Any) -> None:
    approval_model = apps.get_model("orchestration", "Approval")
    for approval in approval_model.objects.filter(status__in=["pending", "sending", "failed"]):
        request = dict(approval.request or {})
        if request.get("api") == "calendar":
            request["params"] = {**(request.get("params") or {}), "sendUpdates": "all"}
            approval.request = request
            approval.save(update_fields=["request"])


class Migration(migrations.Migration):
    dependencies = [("orchestration", "0004_playground_provider_events")]

    operations = [migrations.RunPython(store_what_approval_sends, migrations.RunPython.noop)]
