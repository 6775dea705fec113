# Encrypts the transcripts and memories stored before 0007, a batch per transaction (not atomic: a killed run
# keeps its committed batches and a rerun skips them, see mailagent/encrypted_columns.py). Backwards it writes
# the plaintext again, so 0007 can turn the transcript column back into JSON.

from django.db import migrations

from mailagent.encrypted_columns import decrypt_columns, encrypt_columns

COLUMNS = {"Conversation": ("messages",), "Memory": ("content",)}


def encrypt(apps, schema_editor):
    for model_name, fields in COLUMNS.items():
        encrypt_columns(apps.get_model("orchestration", model_name), fields, using=schema_editor.connection.alias)


def decrypt(apps, schema_editor):
    for model_name, fields in COLUMNS.items():
        decrypt_columns(apps.get_model("orchestration", model_name), fields, using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("orchestration", "0007_encrypted_transcripts_and_memories"),
    ]

    operations = [migrations.RunPython(encrypt, decrypt, elidable=False)]
