# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""cgroup v2 directories for the processes of a test or a lab run.

    with Cgroup(f"ctl{os.getpid()}a") as cg:
        proc = netns.popen_in(ns, argv, cgroup=cg.path)   # every socket in cg
        ... bbrctl attach --cgroup cg.path ...

On exit what still runs in the cgroup is moved back to the root (or, with
kill=True, killed: only ever the creator's own processes) and the directory
is removed, retrying while its members leave.
"""

import os
import signal
import subprocess
import time
from pathlib import Path

from .base import BbrtestError, run

# Where the cgroup v2 hierarchy is: pure v2 layout, then the hybrid layout's
# (loader/attach.c looks in the same places).
CGROUP2_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
CGROUP2_HYBRID = CGROUP2_ROOTS[1]
CGROUP2_FSTYPE = "cgroup2fs"            # stat -f -c %T
RMDIR_TRIES = 50
RMDIR_WAIT_S = 0.1                      # members leave a cgroup asynchronously


def cgroup2_root(mount=False):
    """The mounted cgroup v2 hierarchy. None mounted: with mount, mount one
    at the hybrid layout's place (as bbrctl attach does), else BbrtestError."""
    for root in CGROUP2_ROOTS:
        cp = run(["stat", "-f", "-c", "%T", root], check=False)
        if cp.stdout.strip() == CGROUP2_FSTYPE:
            return root
    if not mount:
        raise BbrtestError(f"no cgroup2 hierarchy mounted (looked at "
                           f"{', '.join(map(str, CGROUP2_ROOTS))})")
    try:
        CGROUP2_HYBRID.mkdir(exist_ok=True)
        subprocess.run(["mount", "-t", "cgroup2", "cgroup2", str(CGROUP2_HYBRID)],
                       check=True, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.CalledProcessError) as e:
        raise BbrtestError(f"no cgroup2 hierarchy and mounting one at {CGROUP2_HYBRID} "
                           f"failed: {getattr(e, 'stderr', '') or e}") from None
    return CGROUP2_HYBRID


class Cgroup:
    """<cgroup2 root>/name for a with-block. Attributes: root, name, path, id
    (the cgroup v2 id, its inode number, once created)."""

    def __init__(self, name, kill=False, mount=False):
        self.root = cgroup2_root(mount=mount)
        self.name = name
        self.path = self.root / name
        self.kill = kill
        self.created = False

    def __enter__(self):
        if self.path.exists():
            raise BbrtestError(f"cgroup {self.path} already exists (rmdir it)")
        try:
            self.path.mkdir()
        except OSError as e:
            raise BbrtestError(f"cannot create cgroup {self.path}: {e}") from None
        self.created = True
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    @property
    def id(self):
        return os.stat(self.path).st_ino

    def wrap(self, argv):
        """argv run inside this cgroup: a shell puts itself in, then execs argv."""
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.path), *argv]

    def pids(self):
        try:
            return [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def remove(self):
        """Empty the cgroup (move or kill its members) and remove it; safe to
        call twice; BbrtestError if it stays busy."""
        if not self.created:
            return
        for _ in range(RMDIR_TRIES):
            for pid in self.pids():
                try:
                    if self.kill:
                        os.kill(pid, signal.SIGKILL)
                    else:
                        (self.root / "cgroup.procs").write_text(str(pid))
                except OSError:
                    pass
            try:
                self.path.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                time.sleep(RMDIR_WAIT_S)
                continue
            self.created = False
            return
        raise BbrtestError(f"cannot remove cgroup {self.path} (still busy)")
