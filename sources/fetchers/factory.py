"""The one place that picks a transport for a source kind (above the transports, so the base
module they build on never imports them back)."""

from __future__ import annotations

from sources.fetchers import Credential, Fetcher, FetchPolicy
from sources.fetchers.https import HttpsFetcher
from sources.fetchers.local import LocalFetcher


def make_fetcher(
    kind: str, identity: str, *, policy: FetchPolicy, credential: Credential | None = None
) -> Fetcher:
    if kind == "local":
        return LocalFetcher(identity, policy=policy)
    return HttpsFetcher(identity, policy=policy, credential=credential or Credential())
