from django.contrib import admin
from django.urls import include, path

from chat import health
from chat.accounts import account_urlpatterns

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include(account_urlpatterns)),
    path("healthz", health.healthz, name="healthz"),
    path("", include("chat.urls")),
]

# API routes answer errors in their JSON shape, pages keep Django's (chat.views).
handler400 = "chat.views.bad_request"
handler404 = "chat.views.not_found"
handler500 = "chat.views.server_error"
