"""The pure parts: signatures, URL rules and the address guard (no database)."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhooks import events, netguard, signing


def test_it_signs_the_timestamp_a_dot_and_the_raw_body_with_hmac_sha256():
    body = b'{"id":"e1","event":"ping"}'
    expected = hmac.new(b"whsec_abc", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert signing.sign("whsec_abc", 1700000000, body) == f"sha256={expected}"


@given(st.binary(max_size=512), st.integers(min_value=0, max_value=2**40))
def test_it_verifies_what_it_signs_and_nothing_else(body, timestamp):
    secret = "whsec_test"
    header = signing.sign(secret, timestamp, body)
    assert signing.verify(secret, timestamp, body, header, now=timestamp)
    assert not signing.verify(secret, timestamp, body + b"x", header, now=timestamp)
    assert not signing.verify("whsec_other", timestamp, body, header, now=timestamp)
    assert not signing.verify(secret, timestamp, body, header, now=timestamp + 301)


def test_it_generates_distinct_prefixed_secrets():
    a, b = signing.secret_generate(), signing.secret_generate()
    assert a != b and a.startswith("whsec_") and len(a) > 40


def test_it_treats_an_empty_subscription_as_every_event():
    assert events.is_subscribed([], events.PUSH_FAILED)
    assert events.is_subscribed([events.PUSH_FAILED], events.PUSH_FAILED)
    assert not events.is_subscribed([events.SOURCE_STALE], events.PUSH_FAILED)


@pytest.mark.parametrize(
    ("url", "allow", "code"),
    [
        ("http://example.org/hook", True, "url-not-https"),
        ("http://127.0.0.1:8000/hook", False, "url-not-https"),
        ("ftp://example.org/hook", True, "url-invalid"),
        ("https:///nohost", True, "url-invalid"),
        ("https://user:pw@example.org/hook", True, "url-credentials"),
        ("https://example.org:99999/", True, "url-invalid"),
        ("https://example.org/" + "a" * 2000, True, "url-too-long"),
    ],
)
def test_it_refuses_urls_that_break_the_rules(url, allow, code):
    with pytest.raises(netguard.UrlRefused) as info:
        netguard.url_parse(url, allow_http_loopback=allow)
    assert info.value.code == code


def test_it_accepts_https_and_plain_http_only_to_loopback_when_allowed():
    target = netguard.url_parse("https://example.org/a?b=1", allow_http_loopback=False)
    assert (target.host, target.port, target.path_and_query) == ("example.org", 443, "/a?b=1")
    for url in ("http://127.0.0.1:9/x", "http://localhost/x", "http://[::1]:9/x"):
        assert netguard.url_parse(url, allow_http_loopback=True).scheme == "http"


@pytest.mark.parametrize(
    "host",
    [
        *("127.0.0.1", "localhost", "10.1.2.3", "192.168.0.1", "169.254.169.254", "::1"),
        *("0.0.0.0", "::ffff:127.0.0.1", "100.64.0.1", "fc00::1", "fe80::1", "240.0.0.1"),
        "224.0.0.1",
    ],
)
def test_it_refuses_non_public_addresses_after_resolution(host):
    with pytest.raises(netguard.UrlRefused) as info:
        netguard.address_resolve(host, 443, allow_private=False)
    assert info.value.code == "address-not-public"


def test_it_allows_private_addresses_only_when_told():
    assert netguard.address_resolve("localhost", 80, allow_private=True) in {"127.0.0.1", "::1"}
    assert netguard.address_resolve("8.8.8.8", 443, allow_private=False) == "8.8.8.8"


def test_it_reports_names_that_do_not_resolve():
    with pytest.raises(netguard.UrlRefused) as info:
        netguard.address_resolve("no-such-host.invalid", 443, allow_private=False)
    assert info.value.code == "dns-failed"


def test_it_keeps_the_pure_modules_free_of_django():
    code = (
        "import sys; import webhooks.signing, webhooks.netguard, webhooks.events; "
        "assert not [m for m in sys.modules if m.startswith('django')], 'django imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
