from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memoryadmin.permissions import Action
from memoryadmin.web import team_view


@team_view(Action.VIEW)
def source_list(request: HttpRequest) -> HttpResponse:
    return render(request, "sources/source_list.html", {})
