"""ensure_admin and recover_runs, the two commands bin/run calls at start-up (issue 2)."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

from chat import services
from chat.models import Message

pytestmark = pytest.mark.django_db


def run(command: str) -> str:
    out = io.StringIO()
    call_command(command, stdout=out)
    return out.getvalue()


@pytest.fixture
def no_admin_password_in_env(monkeypatch):
    monkeypatch.delenv("FIMONE_ADMIN_PASSWORD", raising=False)


def test_ensure_admin_creates_a_superuser_with_a_printed_generated_password(
    no_admin_password_in_env,
):
    output = run("ensure_admin")
    password = re.search(r"with password: (\S+)", output).group(1)
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    assert len(password) >= 16
    assert authenticate(username="admin", password=password) == admin


def test_each_fresh_install_gets_a_different_password(no_admin_password_in_env):
    first = re.search(r"with password: (\S+)", run("ensure_admin")).group(1)
    get_user_model().objects.all().delete()
    second = re.search(r"with password: (\S+)", run("ensure_admin")).group(1)
    assert first != second


def test_ensure_admin_says_nothing_about_passwords_the_second_time(no_admin_password_in_env):
    run("ensure_admin")
    output = run("ensure_admin")
    assert output == ""
    assert get_user_model().objects.filter(is_superuser=True).count() == 1


def test_an_existing_superuser_of_any_name_is_enough(no_admin_password_in_env, django_user_model):
    django_user_model.objects.create_superuser(username="root", password="pw-root-123!")
    assert run("ensure_admin") == ""
    assert not django_user_model.objects.filter(username="admin").exists()


def test_the_password_can_come_from_the_environment_and_is_not_echoed(monkeypatch):
    monkeypatch.setenv("FIMONE_ADMIN_PASSWORD", "env-chosen-Secret-9")
    output = run("ensure_admin")
    assert "env-chosen-Secret-9" not in output
    assert "FIMONE_ADMIN_PASSWORD" in output
    assert authenticate(username="admin", password="env-chosen-Secret-9") is not None


def test_a_plain_user_called_admin_is_not_promoted(no_admin_password_in_env, django_user_model):
    plain = django_user_model.objects.create_user(username="admin", password="pw-plain-123!")
    with pytest.raises(CommandError):
        call_command("ensure_admin", stdout=io.StringIO())
    plain.refresh_from_db()
    assert not plain.is_superuser


def test_recover_runs_marks_unfinished_messages_interrupted(conversation):
    services.user_message_create(conversation=conversation, content="q", run_id="r1")
    services.assistant_message_start(conversation=conversation, run_id="r1", mode="react")
    assert "2" in run("recover_runs")
    assert set(Message.objects.values_list("status", flat=True)) == {"interrupted"}
    assert run("recover_runs") == ""
