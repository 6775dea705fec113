# Encrypts the workspace items and Inbox entries stored before 0004, a batch per transaction (not atomic: a
# killed run keeps its committed batches and a rerun skips them, see mailagent/encrypted_columns.py).
# Backwards it writes the plaintext again, so 0004 can turn the question column back into JSON.

from django.db import migrations

from mailagent.encrypted_columns import decrypt_columns, encrypt_columns

COLUMNS = {"WorkspaceItem": ("description", "data"), "InboxEntry": ("comments", "ask", "reply")}


def encrypt(apps, schema_editor):
    for model_name, fields in COLUMNS.items():
        encrypt_columns(apps.get_model("workspaces", model_name), fields, using=schema_editor.connection.alias)


def decrypt(apps, schema_editor):
    for model_name, fields in COLUMNS.items():
        decrypt_columns(apps.get_model("workspaces", model_name), fields, using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("workspaces", "0004_encrypted_items_and_inbox"),
    ]

    operations = [migrations.RunPython(encrypt, decrypt, elidable=False)]
