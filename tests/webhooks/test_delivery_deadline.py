"""A webhook delivery attempt has a wall-clock deadline, however slowly the receiver answers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.sources.conftest import drip
from webhooks import events
from webhooks.emit import event_emit
from webhooks.models import WebhookDelivery


class _DrippingReceiver(BaseHTTPRequestHandler):
    """Reads the POST, then answers 200 one byte every 0.2 s (status line included)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        drip(0.2, b"ok, received" * 4, headers_too=True)(self)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def dripping_receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DrippingReceiver)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()
    server.server_close()


def test_it_gives_up_an_attempt_that_outlasts_the_delivery_deadline_and_retries(
    team, dripping_receiver, make_endpoint, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_HTTP_TIMEOUT = 10  # every byte comes long before a read would time out
    settings.WEBHOOK_DELIVERY_DEADLINE = 1
    make_endpoint(dripping_receiver)
    with django_capture_on_commit_callbacks(execute=True):
        event_emit(team=team, event=events.PUSH_FAILED, data={"repository": "main"})
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == "retrying"
    assert "MEMORYADMIN_WEBHOOK_DELIVERY_DEADLINE" in delivery.last_error
    assert delivery.last_response_status is None
