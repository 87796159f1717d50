from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    name = "experiments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Ingest: this app's projectors (run header, blackboard, digests) and live fragments.
        from experiments import fragments, projectors

        projectors.register()
        fragments.register()
