from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from experiments.projections import register_file_handler, register_projector
        from memory import episodes, outbound, projectors, recall
        from memory.chunks import remask_chunks
        from state.secrets import on_new_secrets

        register_projector("worker.complete", projectors.project_worker_results, name="memory.worker_results")
        register_projector("memory.write", projectors.project_memory_writes, name="memory.writes")
        # Episodes come from several kinds (results, DAG steps, decisions, run start/end): one pass over the batch.
        register_projector("", episodes.project_episodes, name="memory.episodes", applies=lambda event, _experiment: event.kind in recall.EPISODE_KINDS)
        register_file_handler("long_term", projectors.handle_long_term_file)
        register_file_handler("daily", projectors.handle_daily_file)
        # A secret learnt after a derivative was stored is masked in it too (chunks and their vectors, episode
        # texts and word sets, what was kept of outbound calls: prompts, answers, beliefs).
        on_new_secrets(remask_chunks)
        on_new_secrets(episodes.remask_episodes)
        on_new_secrets(outbound.remask_stored_prompts)
