"""The filesystem tools' directory becomes a per-owner setting (FilesystemRoot).

The old global `OrchestrationSettings.virtual_root` was used by every owner's runs. So nobody loses access
silently, each owner of a director gets that directory as their own root; a superuser can then narrow
each one in the admin. Reversing restores the first superuser's (or first owner's) root as the global one.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def global_to_per_owner(apps, schema_editor):  # type: ignore[no-untyped-def]
    OrchestrationSettings = apps.get_model("orchestration", "OrchestrationSettings")
    FilesystemRoot = apps.get_model("orchestration", "FilesystemRoot")
    Director = apps.get_model("orchestration", "Director")
    current = OrchestrationSettings.objects.filter(pk=1).first()
    configured = (current.virtual_root or "").strip() if current else ""
    if not configured:
        return
    for owner_id in Director.objects.values_list("owner_id", flat=True).distinct().order_by("owner_id"):
        FilesystemRoot.objects.get_or_create(owner_id=owner_id, defaults={"path": configured})


def per_owner_to_global(apps, schema_editor):  # type: ignore[no-untyped-def]
    OrchestrationSettings = apps.get_model("orchestration", "OrchestrationSettings")
    FilesystemRoot = apps.get_model("orchestration", "FilesystemRoot")
    first = FilesystemRoot.objects.exclude(path="").order_by("-owner__is_superuser", "owner_id").first()
    if first is not None:
        OrchestrationSettings.objects.update_or_create(pk=1, defaults={"virtual_root": first.path})


class Migration(migrations.Migration):
    dependencies = [
        ("orchestration", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="FilesystemRoot",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "path",
                    models.CharField(
                        blank=True,
                        help_text="Absolute directory the filesystem tools may read for this owner's runs. "
                        "Empty: DATA_DIR/files/<owner id>. Only superusers can change it.",
                        max_length=1000,
                    ),
                ),
                (
                    "owner",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="filesystem_root",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={"verbose_name": "filesystem root"},
        ),
        migrations.RunPython(global_to_per_owner, per_owner_to_global),
        migrations.RemoveField(model_name="orchestrationsettings", name="virtual_root"),
    ]
