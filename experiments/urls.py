from django.urls import path

from experiments import compare_views, connect_views, run_views, views

app_name = "experiments"

urlpatterns = [
    path("", views.experiment_list, name="list"),
    path("experiments/new", views.experiment_create, name="create"),
    path("experiments/<slug:slug>/", connect_views.overview_tab, name="detail"),
    path("experiments/<slug:slug>/overview/", connect_views.overview_tab, name="overview"),
    path("experiments/<slug:slug>/connect/", connect_views.connect_tab, name="connect"),
    path("experiments/<slug:slug>/connect/tokens", connect_views.token_create, name="token-create"),
    path("experiments/<slug:slug>/connect/tokens/<int:token_pk>/revoke", connect_views.token_revoke, name="token-revoke"),
    path("experiments/<slug:slug>/connect/secrets", connect_views.secrets_declare, name="secrets-declare"),
    path("experiments/<slug:slug>/protocol/", views.protocol_tab, name="protocol"),
    path("experiments/<slug:slug>/runs/", run_views.runs_tab, name="runs"),
    path("experiments/<slug:slug>/runs/<int:pk>/", run_views.run_detail, name="run-detail"),
    path("experiments/<slug:slug>/runs/<int:pk>/iterations/", run_views.run_iterations, name="run-iterations"),
    path("experiments/<slug:slug>/runs/<int:pk>/board/", run_views.run_board, name="run-board"),
    path("experiments/<slug:slug>/runs/<int:pk>/digests/", run_views.run_digests, name="run-digests"),
    path("experiments/<slug:slug>/runs/<int:pk>/problems/", run_views.run_problems, name="run-problems"),
    path("experiments/<slug:slug>/runs/<int:pk>/export/<slug:what>.<slug:fmt>", compare_views.run_export, name="run-export"),
    path("experiments/<slug:slug>/compare/", compare_views.compare_runs, name="compare"),
]
