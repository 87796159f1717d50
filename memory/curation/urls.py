from django.urls import path

from memory.curation import views

app_name = "curation"

urlpatterns = [
    path("experiments/<slug:slug>/review/", views.review_tab, name="review"),
]
