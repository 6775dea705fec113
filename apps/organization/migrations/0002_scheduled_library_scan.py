"""The scheduled library scan (the fallback that catches whatever the watch missed) as a django-q2 schedule."""

from django.db import migrations

SCAN_FUNC = "apps.organization.tasks.scan_libraries_task"


def create_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    if not Schedule.objects.filter(func=SCAN_FUNC).exists():
        Schedule.objects.create(
            name="organization: library scan",
            func=SCAN_FUNC,
            schedule_type="I",
            minutes=5,
            repeats=-1,
        )


def delete_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=SCAN_FUNC).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("organization", "0001_library_files_suggestions_moves"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]
