from django.urls import path

from state import views

app_name = "state"

urlpatterns = [
    path("experiments/<slug:slug>/runs/<int:pk>/state/", views.run_state, name="run-state"),
    path("experiments/<slug:slug>/runs/<int:pk>/state/rounds/", views.run_rounds, name="run-rounds"),
]
