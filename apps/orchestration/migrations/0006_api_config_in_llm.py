# ApiConfig moved to apps.llm, keeping its table (orchestration_apiconfig): directors' and agents' foreign
# keys point at it there, and the model leaves this app's state. No database change.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("orchestration", "0005_google_approvals_send_updates"),
        ("llm", "0001_initial"),
        ("ask", "0007_api_config_in_llm"),
        ("organization", "0005_api_config_in_llm"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="agent",
                    name="api_config",
                    field=models.ForeignKey(
                        blank=True,
                        help_text="Optional override; inherits the director's otherwise.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="agents",
                        to="llm.apiconfig",
                    ),
                ),
                migrations.AlterField(
                    model_name="director",
                    name="api_config",
                    field=models.ForeignKey(
                        blank=True,
                        help_text="Required to run: without it runs are skipped.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="directors",
                        to="llm.apiconfig",
                    ),
                ),
                migrations.DeleteModel(name="ApiConfig"),
            ],
            database_operations=[],
        ),
    ]
