import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_system_checks_pass():
    call_command("check")


@pytest.mark.django_db
def test_migrations_are_complete():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
