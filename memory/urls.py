from django.urls import path

from memory import views

app_name = "memory"

urlpatterns = [
    path("experiments/<slug:slug>/memory/", views.memory_tab, name="tab"),
]
