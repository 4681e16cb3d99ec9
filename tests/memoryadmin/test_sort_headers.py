"""Column headers sort every team list (memoryadmin/templatetags/listing.py `sort_header`):
links that keep the other filters, reverse on a second click, say the direction with
`aria-sort` and an arrow, and only ever name an ordering the list's FilterSet whitelists."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import transaction
from django.template import Context, Template, TemplateSyntaxError
from django.test import RequestFactory

from bundles.filters import ChunkFilterSet
from bundles.models import Chunk
from bundles.selectors import chunk_rows
from formats import memoryai as protocol
from memoryadmin.audit import Actor, audit_record
from memoryadmin.filters import AuditFilterSet
from memoryadmin.invitations import invitation_create
from memoryadmin.listing import listing
from memoryadmin.models import AuditEvent, Role, Scope
from memoryadmin.tokens import token_create
from sources.services.lifecycle import source_add, source_approve, source_refresh_request
from sources.services.refresh import source_refresh
from tests.sources.helpers import record_text, write_source

HEADER = re.compile(
    r'<th scope="col"(?: aria-sort="(?P<sort>\w+)")?><a class="sort" href="(?P<href>[^"]*)"'
    r' title="[^"]*">(?P<label>[^<]*)<span class="sort-arrow[^"]*" aria-hidden="true">'
    r"(?P<arrow>[^<]*)</span></a></th>"
)


def headers(html: str) -> dict[str, dict[str, str]]:
    """Label → {sort: aria-sort or "", href, arrow} of every sortable header on the page."""
    found = {}
    for match in HEADER.finditer(html):
        found[unescape(match["label"])] = {
            "sort": match["sort"] or "",
            "href": unescape(match["href"]),
            "arrow": match["arrow"],
        }
    return found


def query(href: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(href).query)


def assert_sortable(client, url: str, params: dict[str, str]) -> dict[str, dict[str, str]]:  # type: ignore[no-untyped-def]
    """Every header link keeps `params`, drops the page, sorts by one whitelisted name, and
    following it marks that header ascending, whose link then reverses it."""
    response = client.get(url, {**params, "page": "1"})
    assert response.status_code == 200, response.status_code
    allowed = response.context["listing"].filterset.filters["sort"].param_map
    found = headers(response.content.decode())
    assert found, "no sortable header on " + url
    for label, header in found.items():
        asked = query(header["href"])
        for key, value in params.items():
            assert asked[key] == [value], (label, header["href"])
        assert "page" not in asked and "export" not in asked
        (sort,) = asked["sort"]
        assert sort.lstrip("-") in allowed, (label, sort)
        if not header["sort"]:
            assert not sort.startswith("-") and header["arrow"] == "↕"
        followed = headers(client.get(url, asked).content.decode())[label]
        direction = "descending" if sort.startswith("-") else "ascending"
        assert followed["sort"] == direction and followed["arrow"] in "▲▼"
        flipped = query(followed["href"])["sort"]
        assert flipped == [sort[1:] if sort.startswith("-") else f"-{sort}"]
    return found


def test_it_sorts_the_audit_log_by_its_headers_newest_first_by_default(client, admin_user, team):
    for action in ("source.add", "token.create", "member.add"):
        audit_record(actor=Actor.system(), team=team, action=action, summary=action)
    client.force_login(admin_user)
    url = f"/t/{team.slug}/audit/"
    found = assert_sortable(client, url, {"q": "a"})
    # The default order (newest first) is shown on its column, the others offer ascending.
    assert found["When"]["sort"] == "descending" and found["When"]["arrow"] == "▼"
    assert query(found["When"]["href"])["sort"] == ["when"]
    assert set(found) == {"When", "Actor", "Action"}
    by_action = client.get(url, {"sort": "action"}).context["page"]
    actions = [e.action for e in by_action]
    assert actions == sorted(actions)
    reverse = [e.action for e in client.get(url, {"sort": "-action"}).context["page"]]
    assert reverse == sorted(actions, reverse=True)


def test_it_sorts_members_tokens_and_invitations_by_their_headers(
    client, admin_user, make_user, team
):
    make_user("bob", team=team, role=Role.VIEWER)
    token_create(actor=Actor(user=admin_user), team=team, name="ci", scopes=[Scope.CONTEXT_READ])
    with transaction.atomic():
        invitation_create(
            actor=Actor(user=admin_user),
            team=team,
            email="new@example.org",
            role=Role.VIEWER,
            link=lambda secret: f"http://testserver/invite/{secret}/",
        )
    client.force_login(admin_user)
    members = assert_sortable(client, f"/t/{team.slug}/members/", {"role": "admin"})
    assert set(members) == {"User", "Role", "Since"}
    tokens = assert_sortable(client, f"/t/{team.slug}/tokens/", {"q": "ci"})
    assert set(tokens) == {"Name", "Created", "Expires", "Last used"}
    invitations = assert_sortable(client, f"/t/{team.slug}/invitations/", {"role": "viewer"})
    assert set(invitations) == {"E-mail", "Invited", "Expires"}


def test_it_sorts_sources_and_a_sources_records_by_their_headers(
    client, viewer_user, admin_user, team, tmp_path
):
    folder = write_source(
        tmp_path / "src",
        {
            "deploy": record_text("deploy", title="Deploy on Tuesdays", body="Ship it."),
            "rollback": record_text("rollback", title="Rollback steps", body="Undo."),
        },
    )
    actor = Actor(user=admin_user)
    with transaction.atomic():
        source = source_add(actor=actor, team=team, location=str(folder))
    source_approve(actor=actor, source=source)
    run = source_refresh_request(actor=actor, source=source)
    source_refresh(source_id=source.pk, run_id=run.pk)
    client.force_login(viewer_user)
    sources = assert_sortable(client, f"/t/{team.slug}/sources/", {"q": "src"})
    assert set(sources) == {"Source", "Health", "Last success"}
    records = assert_sortable(client, f"/t/{team.slug}/sources/{source.pk}/", {"q": "s"})
    assert set(records) == {"Title and body", "Kind", "Scope", "Updated"}
    titles = [
        r.title
        for r in client.get(f"/t/{team.slug}/sources/{source.pk}/", {"sort": "-title"}).context[
            "page"
        ]
    ]
    assert titles == ["Rollback steps", "Deploy on Tuesdays"]


def test_it_sorts_the_brain_by_its_headers_and_keeps_the_filters(client, viewer_user, team):
    for n, kind in enumerate(("fact", "procedure", "fact")):
        content = f"chunk {n} about deploys"
        Chunk.objects.create(
            team=team,
            content=content,
            content_hash=protocol.content_hash(content),
            memory_type=kind,
        )
    client.force_login(viewer_user)
    found = assert_sortable(client, f"/t/{team.slug}/brain/", {"q": "deploys", "zone": "standard"})
    assert set(found) == {"#", "Type", "Zone"}
    assert found["#"]["sort"] == "descending"  # the brain lists the newest chunk first


def test_it_keeps_rows_with_equal_values_in_one_order_across_pages(client, admin_user, team):
    for n in range(7):
        audit_record(actor=Actor.system(), team=team, action="same.action", summary=str(n))
    request = RequestFactory().get("/", {"sort": "-action"})
    result = listing(request, AuditFilterSet, AuditEvent.objects.filter(team=team), team=team)
    ordering = list(result.filterset.qs.query.order_by)
    assert ordering == ["-action", "pk"]  # ties end on the primary key: a stable pager


def test_it_refuses_a_header_for_an_ordering_the_list_does_not_allow(rf, team):
    request = rf.get("/")
    result = listing(request, ChunkFilterSet, Chunk.objects.filter(team=team), team=team)
    template = Template('{% load listing %}{% sort_header "content" "Content" %}')
    with pytest.raises(TemplateSyntaxError, match="'content' is not a sort of ChunkFilterSet"):
        template.render(Context({"listing": result, "request": request}))


def test_it_ignores_a_sort_outside_the_whitelist_when_marking_the_header(rf, team):
    request = rf.get("/", {"sort": "content"})
    result = listing(request, ChunkFilterSet, chunk_rows(team), team=team)
    assert result.invalid  # the form says so; the header falls back to the list's own order
    html = Template('{% load listing %}{% sort_header "id" "#" %}').render(
        Context({"listing": result, "request": request})
    )
    assert 'aria-sort="descending"' in html and "sort=id" in html
