"""The chat page at ``/`` (helper F replaces this placeholder with the real UI view)."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import TemplateDoesNotExist
from django.template.loader import get_template


@login_required
def index(request: HttpRequest) -> HttpResponse:
    try:
        get_template("chat/index.html")
    except TemplateDoesNotExist:
        return HttpResponse("fimone: the chat UI is not installed yet.", content_type="text/plain")
    return render(request, "chat/index.html")
