"""First-run setup used by `make run`: the first admin user, then demo data when there is no mail.

Demo data (a fictional mailbox in the admin's account) is for development: it is loaded when DEBUG is on
(`make run` sets DEBUG=1 unless told otherwise) or when `--demo` is passed, never by default in production.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_email
from django.db import transaction

from mailagent.signals import demo_data_requested


class Command(BaseCommand):
    help = (
        "Create the first admin user if none exists; with DEBUG on (or --demo) load demo data into an empty database."
    )

    def add_arguments(self, parser: Any) -> None:
        choice = parser.add_mutually_exclusive_group()
        choice.add_argument("--demo", action="store_true", help="Load demo data even with DEBUG off.")
        choice.add_argument("--no-demo", action="store_true", help="Do not load demo data, even with DEBUG on.")

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        admin = user_model.objects.filter(is_superuser=True).order_by("pk").first()
        if admin is None:
            admin = self._create_admin()
        if options["no_demo"]:
            return
        if not (options["demo"] or settings.DEBUG):
            self.stdout.write("Demo data not loaded: DEBUG is off (pass --demo to load it anyway).")
            return
        demo_data_requested.send(sender=self.__class__, user=admin, stdout=self.stdout)

    @transaction.atomic
    def _create_admin(self) -> Any:
        user_model = get_user_model()
        email = os.environ.get("MAILAGENT_ADMIN_EMAIL", "").strip() or "admin@localhost"
        try:
            validate_email(email if "@localhost" not in email else "admin@example.com")
        except Exception as exc:
            raise CommandError(f"MAILAGENT_ADMIN_EMAIL is not a valid address: {email!r}") from exc
        password = os.environ.get("MAILAGENT_ADMIN_PASSWORD", "")
        generated = not password
        if generated:
            password = secrets.token_urlsafe(12)
        admin = user_model.objects.create_superuser(username=email.split("@")[0], email=email, password=password)
        EmailAddress.objects.create(user=admin, email=email, primary=True, verified=True)
        self.stdout.write(self.style.SUCCESS(f"Created the admin user {email}"))
        if generated:
            self.stdout.write(
                self.style.WARNING(
                    f"  password: {password}\n  (shown once; set MAILAGENT_ADMIN_PASSWORD to choose your own,"
                    " or change it later at /accounts/password/change/)"
                )
            )
        return admin
