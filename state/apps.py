from django.apps import AppConfig


class StateConfig(AppConfig):
    name = "state"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from state import fragments, projectors

        projectors.register()
        fragments.register()
