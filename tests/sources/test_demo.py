"""The demo seed is idempotent and shows every kind of outcome."""

from __future__ import annotations

from sources import demo, selectors
from sources.models import Source, SourceState


def test_it_seeds_a_demo_source_idempotently(team, admin_user, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    first = demo.seed(team=team, user=admin_user)
    second = demo.seed(team=team, user=admin_user)
    assert "succeeded" in first and "succeeded" in second
    source = Source.objects.get(team=team)
    assert source.state == SourceState.APPROVED
    snapshot = source.current_snapshot
    codes = sorted(snapshot.rejections.values_list("code", flat=True))
    assert codes == ["bad-timestamp", "yaml-duplicate-key"]
    reasons = dict(selectors.inactive_records(source).values_list("record_id", "inactive_reason"))
    assert reasons == {"deploy-old": "superseded", "freeze-2025": "expired"}
    assert sorted(r.record_id for r in selectors.context_records(team)) == [
        "deploy",
        "test-command",
        "tone",
    ]
