from django.contrib import admin
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog, set_language

from chat import health
from chat.accounts import account_urlpatterns

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include(account_urlpatterns)),
    path("healthz", health.healthz, name="healthz"),
    # The language switch posts here (CSRF-protected; the choice is kept in a cookie).
    path("i18n/setlang/", set_language, name="set_language"),
    # The static JS translates through the catalog of the request's language.
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    path("", include("chat.urls")),
]

# API routes answer errors in their JSON shape, pages keep Django's (chat.api.conversations).
handler400 = "chat.api.conversations.bad_request"
handler404 = "chat.api.conversations.not_found"
handler500 = "chat.api.conversations.server_error"
