# ApiConfig moved to apps.llm with its table: the foreign key's target changes in the state only.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("organization", "0004_guideline_proposal_llm"),
        ("llm", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="organizationsettings",
                    name="api_config",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="llm.apiconfig",
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
