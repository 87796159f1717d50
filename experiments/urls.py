from django.urls import path

from experiments import views

app_name = "experiments"

urlpatterns = [
    path("", views.experiment_list, name="list"),
    path("experiments/new", views.experiment_create, name="create"),
    path("experiments/<slug:slug>/", views.experiment_detail, name="detail"),
    path("experiments/<slug:slug>/protocol/", views.protocol_tab, name="protocol"),
    path("experiments/<slug:slug>/runs/", views.runs_tab, name="runs"),
    path("experiments/<slug:slug>/runs/<int:pk>/", views.run_detail, name="run-detail"),
    # Placeholders until the ingest capability gives each run tab its own view.
    path("experiments/<slug:slug>/runs/<int:pk>/iterations/", views.run_detail, name="run-iterations"),
    path("experiments/<slug:slug>/runs/<int:pk>/board/", views.run_detail, name="run-board"),
    path("experiments/<slug:slug>/runs/<int:pk>/digests/", views.run_detail, name="run-digests"),
    path("experiments/<slug:slug>/runs/<int:pk>/problems/", views.run_detail, name="run-problems"),
]
