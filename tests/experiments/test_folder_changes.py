"""How watchers learn of changes: kernel notifications, polling on network filesystems, both followed to the ledger."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from django.db import connections
from hypothesis import given
from hypothesis import strategies as st

from experiments.demo import replay_demo
from experiments.folder_changes import FolderChanges, choose_mode, filesystem_type, parse_mountinfo
from experiments.models import Event, Run
from experiments.watch import watch_folders

MOUNTINFO = """\
22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:26 / /proc rw,nosuid shared:5 - proc proc rw
41 22 0:40 / /mnt/team\\040share rw,relatime shared:20 - nfs4 fileserver:/export rw,vers=4.2
42 41 0:41 / /mnt/team\\040share/local rw shared:21 - tmpfs tmpfs rw
"""


def test_the_deepest_mount_names_the_filesystem() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert ("/mnt/team share", "nfs4") in mounts
    assert filesystem_type("/work/wf", mounts) == "ext4"
    assert filesystem_type("/mnt/team share/runs/wf", mounts) == "nfs4"
    assert filesystem_type("/mnt/team share/local/wf", mounts) == "tmpfs"
    assert filesystem_type("/mnt/team sharex", mounts) == "ext4"  # a prefix of the name is not a parent


@given(st.lists(st.tuples(st.lists(st.sampled_from("abc"), min_size=1, max_size=3), st.sampled_from(["ext4", "nfs", "xfs"])), max_size=6),
       st.lists(st.sampled_from("abc"), max_size=4))  # fmt: skip
def test_filesystem_type_is_that_of_the_longest_enclosing_mount(mounts, parts) -> None:
    table = [("/", "rootfs")] + [("/" + "/".join(p), fstype) for p, fstype in mounts]
    path = "/" + "/".join(parts)
    enclosing = [(point, fstype) for point, fstype in table if point == "/" or path == point or path.startswith(point + "/")]
    longest = max(len(point) for point, _ in enclosing)
    assert filesystem_type(path, table) == [fstype for point, fstype in enclosing if len(point) == longest][-1]


def test_auto_polls_only_where_notifications_cannot_work() -> None:
    assert choose_mode("auto", ["ext4", "tmpfs"]) == "notify"
    assert choose_mode("auto", ["ext4", "nfs4"]) == "poll"
    assert choose_mode("AUTO", ["fuse.sshfs"]) == "poll"
    assert choose_mode("notify", ["nfs"]) == "notify" and choose_mode("poll", ["ext4"]) == "poll"
    with pytest.raises(ValueError, match="watch mode"):
        choose_mode("inotify", [])


@pytest.mark.parametrize("mode", ["notify", "poll"])
def test_a_write_is_reported_for_its_folder(tmp_path: Path, mode: str) -> None:
    quiet, busy = tmp_path / "quiet", tmp_path / "busy"
    for folder in (quiet, busy / "runs"):
        folder.mkdir(parents=True)
    changes = FolderChanges(mode=mode, poll_interval=0.1)
    try:
        assert changes.follow([quiet, busy]) and not changes.follow([busy, quiet])
        time.sleep(0.5)  # the watch is set up by its thread; a write before that is caught by the first pass anyway
        (busy / "runs" / "x.jsonl").write_text('{"a": 1}\n')
        seen: set[Path] = set()
        deadline = time.monotonic() + 30
        while busy not in seen and time.monotonic() < deadline:
            seen |= changes.wait(1.0)
        assert seen == {busy}
    finally:
        changes.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", ["notify", "poll"])
def test_a_watcher_follows_a_run_written_while_it_waits(tmp_path: Path, mode: str) -> None:
    folder = tmp_path / "wf"
    folder.mkdir()
    stop = threading.Event()

    def follow() -> None:
        try:
            watch_folders([folder], experiment_slug=f"watched-{mode}", mode=mode, interval=0.1, should_stop=stop.is_set)
        finally:
            connections.close_all()

    watcher = threading.Thread(target=follow)
    watcher.start()
    try:
        time.sleep(1.0)  # the watcher's first pass finds an empty folder and waits
        replay_demo(folder, delay=0.05)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            run = Run.objects.filter(experiment__slug=f"watched-{mode}", depth=0).first()
            if run is not None and run.status == "complete" and Event.objects.filter(run=run, kind="run.complete").exists():
                break
            time.sleep(0.2)
        run = Run.objects.get(experiment__slug=f"watched-{mode}", depth=0)
        assert run.status == "complete" and run.iterations == 3
    finally:
        stop.set()
        watcher.join(timeout=30)
    assert not watcher.is_alive()


@pytest.mark.parametrize("mode", ["notify", "poll"])
def test_every_append_is_reported_even_two_within_one_second(tmp_path: Path, mode: str) -> None:
    stream = tmp_path / "board.jsonl"
    stream.write_text("")
    changes = FolderChanges(mode=mode, poll_interval=0.1)
    try:
        changes.follow([tmp_path])
        time.sleep(0.5)
        for n in range(6):  # 0.3 s apart: pairs share a wall-clock second, which second-resolution pollers miss
            with stream.open("a") as handle:
                handle.write(f'{{"n": {n}}}\n')
            seen: set[Path] = set()
            deadline = time.monotonic() + 10
            while not seen and time.monotonic() < deadline:
                seen = changes.wait(0.5)
            assert seen == {tmp_path}, f"append {n} was not reported"
            time.sleep(0.3)
    finally:
        changes.close()
