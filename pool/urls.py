from django.urls import path

from pool import views

app_name = "pool"

urlpatterns = [
    path("pool/", views.pool_page, name="page"),
    path("pool/proposals/<str:proposal_id>/vote", views.vote, name="vote"),
    path("experiments/<slug:slug>/pool/propose/<int:pk>", views.propose, name="propose"),
    path("experiments/<slug:slug>/pool/subscription", views.subscribe, name="subscribe"),
]
