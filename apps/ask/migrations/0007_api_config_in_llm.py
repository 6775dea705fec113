# ApiConfig moved to apps.llm with its table: the foreign key's target changes in the state only.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("ask", "0006_intent_choose"),
        ("llm", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="asksettings",
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
