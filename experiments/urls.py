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
]
