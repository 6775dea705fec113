"""Fetch cycles and the fetcher schedule become per owner.

Existing cycles take the user who requested them as owner (scheduled ones had nobody: they stay
ownerless, visible to staff only). The old global schedule, which synced every owner's accounts,
becomes one schedule per owner of a mail account with the same interval and on/off state.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import F

OLD_SCHEDULE = "mailagent-fetcher"


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    FetchCycle = apps.get_model("routing", "FetchCycle")
    Schedule = apps.get_model("django_q", "Schedule")
    MailAccount = apps.get_model("mail", "MailAccount")
    FetchCycle.objects.filter(owner__isnull=True, requested_by__isnull=False).update(owner=F("requested_by"))
    old = Schedule.objects.filter(name=OLD_SCHEDULE).first()
    if old is None:
        return
    for owner_id in MailAccount.objects.values_list("owner_id", flat=True).distinct().order_by("owner_id"):
        Schedule.objects.get_or_create(
            name=f"{OLD_SCHEDULE}-{owner_id}",
            defaults={
                "func": "apps.routing.tasks.scheduled_fetch_task",
                "kwargs": f"{{'owner_id': {int(owner_id)}}}",
                "schedule_type": old.schedule_type,
                "minutes": old.minutes,
                "repeats": old.repeats,
                "next_run": old.next_run,
            },
        )
    old.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("routing", "0001_initial"),
        ("mail", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="fetchcycle",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="fetch_cycles",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
