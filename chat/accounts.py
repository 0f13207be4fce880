"""Account routes: Django's auth views, with password reset only when e-mail is configured.

Without ``EMAIL_URL`` there is no way to deliver a reset link, and Django's default backend
would try SMTP on localhost:25 for every anonymous POST: the reset routes then answer 404 and
the login page shows no link. Checked per request, so changing the setting needs no new
URLconf.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.urls import path


def password_reset_enabled() -> bool:
    return bool(getattr(settings, "EMAIL_URL", ""))


def _when_mail_configured(
    view: Callable[..., HttpResponseBase],
) -> Callable[..., HttpResponseBase]:
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponseBase:
        if not password_reset_enabled():
            raise Http404("Password reset needs e-mail, which is not configured.")
        return view(request, *args, **kwargs)

    return wrapper


class LoginView(auth_views.LoginView):
    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["password_reset_enabled"] = password_reset_enabled()
        return context


account_urlpatterns = [
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path(
        "password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path(
        "password_reset/",
        _when_mail_configured(auth_views.PasswordResetView.as_view()),
        name="password_reset",
    ),
    path(
        "password_reset/done/",
        _when_mail_configured(auth_views.PasswordResetDoneView.as_view()),
        name="password_reset_done",
    ),
    path(
        "reset/<uidb64>/<token>/",
        _when_mail_configured(auth_views.PasswordResetConfirmView.as_view()),
        name="password_reset_confirm",
    ),
    path(
        "reset/done/",
        _when_mail_configured(auth_views.PasswordResetCompleteView.as_view()),
        name="password_reset_complete",
    ),
]
