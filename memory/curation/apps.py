from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "memory.curation"
    label = "curation"
    verbose_name = "Curation and review"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from awp_site.live import register_experiment_fragment
        from experiments.projections import register_file_handler, register_projector
        from memory.curation import badge, projectors

        register_projector("run.complete", projectors.on_run_complete, name="curation.on_run_complete")
        for kind in ("tool", "fact", "antipattern"):
            register_file_handler(kind, projectors.on_runtime_curator_file)
        register_experiment_fragment("curation.pending_badge", badge.badge_fragments)
