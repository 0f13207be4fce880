"""Create the local admin account on first start; never a default password.

When no superuser exists, creates "admin" with the password from FIMONE_ADMIN_PASSWORD or
a generated one, printed this one time. Otherwise it says nothing about passwords.
"""

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

USERNAME = "admin"


class Command(BaseCommand):
    help = "Create the 'admin' superuser with a generated password if no superuser exists."

    def handle(self, *args, **options) -> None:
        users = get_user_model()
        if users.objects.filter(is_superuser=True).exists():
            return
        if users.objects.filter(username=USERNAME).exists():
            raise CommandError(
                f"A non-superuser named {USERNAME!r} exists; create a superuser with "
                "'manage.py createsuperuser' instead."
            )
        from_env = os.environ.get("FIMONE_ADMIN_PASSWORD", "")
        password = from_env or secrets.token_urlsafe(15)
        users.objects.create_superuser(username=USERNAME, email="", password=password)
        if from_env:
            self.stdout.write(
                f"Created superuser {USERNAME!r} (password from FIMONE_ADMIN_PASSWORD)."
            )
            return
        self.stdout.write(
            self.style.WARNING(
                f"Created superuser {USERNAME!r} with password: {password}\n"
                "This password is shown only now. Change it at /admin/password_change/."
            )
        )
