from django.urls import path

from memory import views

app_name = "memory"

urlpatterns = [
    path("experiments/<slug:slug>/memory/", views.memory_tab, name="tab"),
    path("experiments/<slug:slug>/memory/long-term/", views.long_term, name="long-term"),
    path("experiments/<slug:slug>/memory/long-term/diff/", views.long_term_diff, name="long-term-diff"),
    path("experiments/<slug:slug>/memory/long-term/edit/", views.long_term_edit, name="long-term-edit"),
    path(
        "experiments/<slug:slug>/memory/long-term/restore/<int:version>/",
        views.long_term_restore,
        name="long-term-restore",
    ),
    path("experiments/<slug:slug>/memory/curated/", views.curated, name="curated"),
    path("experiments/<slug:slug>/memory/working/", views.working, name="working"),
    path("experiments/<slug:slug>/memory/episodic/", views.episodic, name="episodic"),
    path("experiments/<slug:slug>/memory/recall/", views.recall, name="recall"),
    path("experiments/<slug:slug>/memory/recall/reflect/", views.reflect_now, name="reflect-now"),
    path("experiments/<slug:slug>/memory/notes/", views.notes, name="notes"),
    path("experiments/<slug:slug>/memory/notes/<int:pk>/edit/", views.note_edit, name="note-edit"),
    path("experiments/<slug:slug>/memory/search/", views.search, name="search"),
    path("experiments/<slug:slug>/memory/audit/", views.audit, name="audit"),
]
