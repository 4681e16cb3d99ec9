"""Stamp each request with an id (echoed as X-Request-Id) and remember the client address."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from memoryadmin.audit import current_ip, current_request_id
from memoryadmin.authentication import client_ip


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = uuid.uuid4().hex
        id_token = current_request_id.set(request_id)
        ip_token = current_ip.set(client_ip(request))  # XFF only from trusted proxies
        try:
            response = self.get_response(request)
        finally:
            current_request_id.reset(id_token)
            current_ip.reset(ip_token)
        response["X-Request-Id"] = request_id
        return response
