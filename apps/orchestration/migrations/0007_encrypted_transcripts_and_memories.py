# Transcripts and memories become encrypted fields (the column turns into text on PostgreSQL; SQLite already
# stored the JSON as text). 0008 encrypts the rows already stored; until it has run, the fields read the
# legacy plaintext as it is.

import mailagent.crypto
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("orchestration", "0006_api_config_in_llm"),
    ]

    operations = [
        migrations.AlterField(
            model_name="conversation",
            name="messages",
            field=mailagent.crypto.EncryptedJSONField(blank=True, default=list),
        ),
        migrations.AlterField(
            model_name="memory",
            name="content",
            field=mailagent.crypto.EncryptedTextField(),
        ),
    ]
