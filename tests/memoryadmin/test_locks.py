"""named_lock on Redis: the lease is renewed while the holder lives, past one lease."""

from __future__ import annotations

import time

import pytest
import redis
from django.conf import settings as django_settings

from memoryadmin.locks import LockBusy, named_lock


@pytest.mark.skipif(not django_settings.REDIS_URL, reason="the lease is Redis's")
def test_it_keeps_a_lock_held_past_its_lease(settings):
    settings.LOCK_LEASE_SECONDS = 1  # renewed every third of a second
    name = f"test-lease-{time.time_ns()}"
    with named_lock(name):
        time.sleep(2.5)  # more than two leases: only the renewals keep it held
        with pytest.raises(LockBusy), named_lock(name):
            pytest.fail("the lock was taken a second time while held")
    # released at the end: its key is gone from Redis
    key = f"memoryadmin:lock:{name}"
    assert not redis.Redis.from_url(django_settings.REDIS_URL).exists(key)
