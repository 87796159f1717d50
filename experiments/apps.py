from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    name = "experiments"
    default_auto_field = "django.db.models.BigAutoField"
