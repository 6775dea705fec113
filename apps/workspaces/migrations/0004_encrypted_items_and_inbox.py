# Workspace item content (data, description) and what an Inbox entry says (comments, question, reply) become
# encrypted fields (the question's column turns into text on PostgreSQL). 0005 encrypts the rows already
# stored; until it has run, the fields read the legacy plaintext as it is.

import mailagent.crypto
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0003_mailbox_tokens_mcp_calls"),
    ]

    operations = [
        migrations.AlterField(
            model_name="inboxentry",
            name="ask",
            field=mailagent.crypto.EncryptedJSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="inboxentry",
            name="comments",
            field=mailagent.crypto.EncryptedTextField(blank=True),
        ),
        migrations.AlterField(
            model_name="inboxentry",
            name="reply",
            field=mailagent.crypto.EncryptedTextField(blank=True),
        ),
        migrations.AlterField(
            model_name="workspaceitem",
            name="data",
            field=mailagent.crypto.EncryptedTextField(blank=True),
        ),
        migrations.AlterField(
            model_name="workspaceitem",
            name="description",
            field=mailagent.crypto.EncryptedTextField(blank=True),
        ),
    ]
