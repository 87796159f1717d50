"""Websocket routes: a run page, an experiment's pages, the experiments list (all live, see experiments/consumers.py)."""

from __future__ import annotations

from django.urls import path

from experiments.consumers import ExperimentConsumer, ExperimentListConsumer, RunConsumer
from pool.consumers import PoolConsumer

websocket_urlpatterns: list = [
    path("ws/runs/<int:run_pk>/", RunConsumer.as_asgi()),
    path("ws/experiments/", ExperimentListConsumer.as_asgi()),
    path("ws/experiments/<slug:slug>/", ExperimentConsumer.as_asgi()),
    path("ws/pool/", PoolConsumer.as_asgi()),
]
