from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "memory.curation"
    label = "curation"
    verbose_name = "Curation and review"
    default_auto_field = "django.db.models.BigAutoField"
