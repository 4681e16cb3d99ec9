"""A delivery made for real by a Celery worker process."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from tests.conftest import wait_for
from webhooks import events
from webhooks.emit import event_emit
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.worker


def test_it_delivers_an_event_through_a_real_worker(celery_worker, team, receiver, make_endpoint):
    _, secret = make_endpoint(receiver.url("/worker"))
    # Outside any transaction: on_commit sends at once, the worker process picks it up.
    event_emit(team=team, event=events.DECISION_MADE, data={"proposal": 7})

    delivery = wait_for(
        lambda: WebhookDelivery.objects.filter(state="succeeded").first(), timeout=30
    )
    [received] = receiver.requests
    signed = received.headers["X-Memoryadmin-Timestamp"].encode() + b"." + received.body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    assert received.headers["X-Memoryadmin-Signature"] == f"sha256={expected}"
    assert json.loads(received.body)["data"] == {"proposal": 7}
    assert received.headers["X-Memoryadmin-Delivery"] == str(delivery.uid)
    assert "webhooks.tasks.deliver" in celery_worker.log_path.read_text()
