from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView

from bundles.mcp import mcp_view
from bundles.usage.views import usage_page
from memoryadmin import api_views, audit_api, member_api, member_views, token_api, views
from memoryadmin.middleware import content_security_policy_extend

# Redoc styles its page at run time (styled-components' <style> elements) and runs its search
# in a worker from a blob: URL; the page shows only our own schema.
api_docs_csp = content_security_policy_extend(
    {"style-src": "'unsafe-inline'", "worker-src": "blob:"}
)

team_patterns = [
    path("", views.team_home, name="team-home"),
    path("tokens/", views.token_list, name="token-list"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"),
    path("audit/", views.audit_list, name="team-audit"),
    path("usage/", usage_page, name="team-usage"),
    path("members/", member_views.member_list, name="member-list"),
    path("members/<int:membership_id>/", member_views.member_change, name="member-change"),
    path("members/<int:membership_id>/remove/", member_views.member_remove, name="member-remove"),
    path("invitations/", member_views.invitation_list, name="invitation-list"),
    path(
        "invitations/<int:invitation_id>/revoke/",
        member_views.invitation_revoke,
        name="invitation-revoke",
    ),
    path("sources/", include("sources.urls")),
    path("reviews/", include("reviews.urls")),
    path("brain/", include("bundles.urls")),
    path("webhooks/", include("webhooks.urls")),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("accounts/login/", views.RateLimitedLoginView.as_view(), name="login"),
    path("invite/<str:secret>/", member_views.invitation_accept, name="invitation-accept"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("t/<slug:team_slug>/", include(team_patterns)),
    path("api/me/", api_views.MeView.as_view(), name="api-me"),
    path("api/tokens/", token_api.TokenListView.as_view(), name="api-token-list"),
    path(
        "api/tokens/<int:token_id>/", token_api.TokenDetailView.as_view(), name="api-token-detail"
    ),
    path("api/members/", member_api.MemberList.as_view(), name="api-member-list"),
    path("api/members/<int:pk>/", member_api.MemberDetail.as_view(), name="api-member-detail"),
    path("api/invitations/", member_api.InvitationList.as_view(), name="api-invitation-list"),
    path(
        "api/invitations/<int:pk>/",
        member_api.InvitationDetail.as_view(),
        name="api-invitation-detail",
    ),
    path("api/audit/", audit_api.AuditList.as_view(), name="api-audit-list"),
    path("api/", include("sources.api_urls")),
    path("api/", include("reviews.api_urls")),
    path("api/", include("webhooks.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        api_docs_csp(SpectacularRedocView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
    path("", include("bundles.api_urls")),
    path("mcp", mcp_view, name="mcp"),
]

handler400 = "memoryadmin.error_views.bad_request"
handler403 = "memoryadmin.error_views.permission_denied"
handler404 = "memoryadmin.error_views.page_not_found"
handler500 = "memoryadmin.error_views.server_error"
