"""Which watched folders changed: kernel notifications (inotify through `watchfiles`), polling where they fail.

Notifications cost nothing at rest and report a write within ~50-100 ms. They do not work on network
filesystems (a write on another host never reaches this kernel), so folders there are polled instead; the
choice is automatic and `AWP_WATCH_MODE` (or `awp_watch --watch-mode`) = `notify` | `poll` overrides it.
No Django here.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

MODES = ("auto", "notify", "poll")
# Filesystems whose changes made elsewhere are not reported by inotify (remote, or a host shared into a VM).
NETWORK_FILESYSTEMS = frozenset({
    "nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre", "gpfs",
    "ocfs2", "beegfs", "fuse.sshfs", "fuse.s3fs", "fuse.rclone", "fuse.gcsfuse", "fuse.glusterfs", "fuse.cephfs",
    "fuse.grpcfuse", "fakeowner", "vboxsf", "vmhgfs", "fuse.vmhgfs-fuse", "drvfs", "prl_fs",
})  # fmt: skip


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal: "\040" is a space.
    return field.encode().decode("unicode_escape") if "\\" in field else field


def parse_mountinfo(text: str) -> list[tuple[str, str]]:
    """(mount point, filesystem type) for each line of /proc/self/mountinfo."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        if len(fields) > dash + 1 and len(fields) > 4:
            mounts.append((_unescape(fields[4]), fields[dash + 1]))
    return mounts


def filesystem_type(path: str, mounts: Iterable[tuple[str, str]]) -> str:
    """The type of the filesystem holding absolute `path`: the mount with the longest matching mount point."""
    best, kind = -1, ""
    for point, fstype in mounts:
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= best:  # >=: a later mount over the same point hides the earlier one
            best, kind = len(point), fstype
    return kind


def choose_mode(requested: str, fstypes: Iterable[str]) -> str:
    """"notify" or "poll": what was asked, or under "auto" polling as soon as one folder is on a network FS."""
    requested = (requested or "auto").strip().lower()
    if requested not in MODES:
        raise ValueError(f"watch mode must be one of {', '.join(MODES)}, not {requested!r}")
    if requested != "auto":
        return requested
    return "poll" if any(t in NETWORK_FILESYSTEMS for t in fstypes) else "notify"


def mode_for(folders: Iterable[Path], requested: str | None = None) -> str:
    """The watch mode for these folders on this machine (AWP_WATCH_MODE when nothing is requested)."""
    requested = requested or os.environ.get("AWP_WATCH_MODE", "auto")
    try:
        mounts = parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    except OSError:  # not Linux: watchfiles picks the platform's own notifications
        mounts = []
    return choose_mode(requested, (filesystem_type(str(f.resolve()), mounts) for f in folders))


class FolderChanges:
    """Reports which of the followed folders changed; a thread runs `watchfiles` and queues the folders."""

    def __init__(self, *, mode: str, poll_interval: float = 0.2) -> None:
        self.mode = mode
        self.poll_interval = poll_interval
        self.changed: queue.SimpleQueue[Path] = queue.SimpleQueue()
        self.watched: frozenset[Path] = frozenset()
        self._stop: threading.Event | None = None

    def follow(self, folders: Iterable[Path]) -> bool:
        """Watch exactly `folders` (existing directories); True when the set changed (restarted watching)."""
        wanted = frozenset(folders)
        if wanted == self.watched:
            return False
        self.close()
        self.watched = wanted
        if wanted:
            self._stop = threading.Event()
            threading.Thread(target=self._run, args=(sorted(wanted), self._stop), daemon=True, name="awp-watch-notify").start()
        return True

    def wait(self, timeout: float) -> set[Path]:
        """The folders that changed, waiting up to `timeout` seconds for the first one."""
        found: set[Path] = set()
        try:
            found.add(self.changed.get(timeout=timeout))
            while True:
                found.add(self.changed.get_nowait())
        except queue.Empty:
            return found

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        self.watched = frozenset()

    def _run(self, folders: list[Path], stop: threading.Event) -> None:
        if self.mode == "poll":
            self._poll(folders, stop)
            return
        import watchfiles

        try:
            # step 50 ms: a burst of writes is reported 50 ms after its last write (debounce caps a long burst).
            for changes in watchfiles.watch(
                *folders, stop_event=stop, step=50, debounce=400, rust_timeout=0, raise_interrupt=False,
            ):  # fmt: skip
                for _, path in changes:
                    self.changed.put(_owner(Path(path), folders))
        except Exception as error:  # e.g. the inotify watch limit: poll rather than go blind
            log.warning("file notifications failed (%s); polling %s instead", error, folders)
            for folder in folders:
                self.changed.put(folder)  # anything written meanwhile is caught by a pass
            self._poll(folders, stop)

    def _poll(self, folders: list[Path], stop: threading.Event) -> None:
        # Our own stat loop, not watchfiles' poller: that one compares mtimes in whole seconds and misses a
        # second append within the same second (measured: 4 of 12 appends 0.3 s apart went unreported).
        seen = {folder: tree_signature(folder) for folder in folders}
        while not stop.wait(self.poll_interval):
            for folder in folders:
                signature = tree_signature(folder)
                if signature != seen[folder]:
                    seen[folder] = signature
                    self.changed.put(folder)


def tree_signature(folder: Path) -> int:
    """A hash of every file's path, inode, size and mtime (ns) under `folder`: it changes with any write."""
    entries = []
    stack = [str(folder)]
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                for entry in listing:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                        continue
                    try:
                        stat = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue  # removed meanwhile
                    entries.append((entry.path, stat.st_ino, stat.st_size, stat.st_mtime_ns))
        except OSError:
            continue  # a folder removed meanwhile
    return hash(frozenset(entries))


def _owner(path: Path, folders: list[Path]) -> Path:
    """The watched folder that contains `path` (the deepest, when folders nest)."""
    owners = [f for f in folders if path == f or f in path.parents]
    return max(owners, key=lambda f: len(f.parts)) if owners else folders[0]
