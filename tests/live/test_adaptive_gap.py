"""Run sockets space frames by what frames cost to render: close together when cheap, up to the ceiling when not."""

from __future__ import annotations

from experiments.consumers import MIN_GAP, RunConsumer, adaptive_gap


def test_cheap_frames_follow_closely_and_slow_ones_coalesce_up_to_the_ceiling():
    ceiling = RunConsumer.frame_gap
    assert adaptive_gap(0.0, ceiling) == MIN_GAP < ceiling
    assert adaptive_gap(0.004, ceiling) == 0.008
    assert adaptive_gap(0.2, ceiling) == ceiling
    assert [adaptive_gap(b, ceiling) for b in (0.001, 0.005, 0.01, 0.02)] == sorted(adaptive_gap(b, ceiling) for b in (0.001, 0.005, 0.01, 0.02))


def test_a_socket_taking_a_cached_frame_waits_as_long_as_the_shared_render_took():
    from experiments import consumers

    socket = RunConsumer()
    socket.run_pk = 987654
    consumers.render_seconds[socket.run_pk] = 0.012
    try:
        assert socket.gap_after(0.0001) == 0.024  # its own cache hit cost nothing; the run's frames cost 12 ms
    finally:
        consumers.render_seconds.pop(socket.run_pk)
