from django.urls import path

from memory.curation import fact_views, views

app_name = "curation"

urlpatterns = [
    path("experiments/<slug:slug>/review/", views.review_tab, name="review"),
    path("experiments/<slug:slug>/review/bulk", views.bulk, name="bulk"),
    path("experiments/<slug:slug>/review/curate", views.curate_now, name="curate-now"),
    path("experiments/<slug:slug>/review/writeback-retry", views.writeback_retry, name="writeback-retry"),
    path("experiments/<slug:slug>/review/<int:pk>/", views.proposal_detail, name="proposal"),
    path("experiments/<slug:slug>/review/<int:pk>/vote", views.vote, name="vote"),
    path("experiments/<slug:slug>/curated/", views.curated_panel, name="curated"),
    path("experiments/<slug:slug>/curated/<int:pk>/retract", views.retract, name="retract"),
    path("experiments/<slug:slug>/curated/<int:pk>/edit", views.edit_promoted, name="edit-promoted"),
    path("experiments/<slug:slug>/memory/facts/", fact_views.facts, name="facts"),
    path("experiments/<slug:slug>/memory/facts/<int:pk>/", fact_views.fact_detail, name="fact"),
    path("experiments/<slug:slug>/memory/facts/<int:pk>/<str:action>", fact_views.fact_action, name="fact-action"),
    path("experiments/<slug:slug>/review/<int:pk>/trial", fact_views.approve_on_trial, name="approve-on-trial"),
    path("experiments/<slug:slug>/review/<int:pk>/resolve", fact_views.resolve, name="resolve"),
    path("experiments/<slug:slug>/memory/runs/<int:run_pk>/facts/", fact_views.run_facts, name="run-facts"),
]
