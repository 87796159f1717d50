from django.urls import path

from experiments import views as experiment_views

app_name = "state"

urlpatterns = [
    # Placeholder until the state capability provides the State tab.
    path("experiments/<slug:slug>/runs/<int:pk>/state/", experiment_views.run_detail, name="run-state"),
]
