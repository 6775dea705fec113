# ApiConfig moved here from orchestration. Its table stays `orchestration_apiconfig` (state only: no
# database change), its content type (and so its permissions and admin log entries) is renamed to this app.

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import mailagent.crypto


def move_content_type(apps, schema_editor, *, source: str, target: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    if content_types.objects.using(db).filter(app_label=target, model="apiconfig").exists():
        return
    content_types.objects.using(db).filter(app_label=source, model="apiconfig").update(app_label=target)


def forwards(apps, schema_editor):
    move_content_type(apps, schema_editor, source="orchestration", target="llm")


def backwards(apps, schema_editor):
    move_content_type(apps, schema_editor, source="llm", target="orchestration")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("contenttypes", "0002_remove_content_type_name"),
        ("orchestration", "0005_google_approvals_send_updates"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ApiConfig",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(max_length=100)),
                        (
                            "base_url",
                            models.URLField(
                                blank=True,
                                help_text="e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1",
                                max_length=500,
                            ),
                        ),
                        (
                            "api_key",
                            mailagent.crypto.EncryptedTextField(
                                associated_data="orchestration.apiconfig.api_key",
                                blank=True,
                                help_text="Stored encrypted (AES-256-GCM) when VX_MAILAGENT_KEY is set.",
                            ),
                        ),
                        ("model", models.CharField(max_length=200)),
                        ("max_concurrency", models.PositiveIntegerField(default=4, help_text="Parallel requests per process.")),
                        ("timeout_seconds", models.PositiveIntegerField(default=60)),
                        ("max_retries", models.PositiveIntegerField(default=4)),
                        ("input_cost_per_mtok", models.DecimalField(decimal_places=4, default=0, max_digits=10)),
                        ("output_cost_per_mtok", models.DecimalField(decimal_places=4, default=0, max_digits=10)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "owner",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="api_configs",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "API config",
                        "db_table": "orchestration_apiconfig",
                        "ordering": ["name"],
                        "constraints": [
                            models.UniqueConstraint(fields=("owner", "name"), name="api_config_unique_name_per_owner")
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(forwards, backwards),
    ]
