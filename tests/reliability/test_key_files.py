"""Regression test of issue 25's key-file race: keygen created `secret.tmp` 0666 under the
umask, renamed it, and only then set 0600; a user polling the directory read the whole key in
3 of 5 keygens, and key directories were 0755. Now every secret file (the secret key, the
signing keys, their temporary names) is 0600 from the moment it exists, directories 0700."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import threading
from pathlib import Path

from reliability_common import ok

from driver.run import Built

SECRET_PREFIXES = ("secret", "coordinator.sign")


def _watch(root: Path, stop: threading.Event, seen: dict[str, set[int]]) -> None:
    """Poll every entry under `root` as fast as Python can, recording each mode seen; one
    last pass after keygen exits, so that the final files are seen however the threads were
    scheduled (under load the watcher could miss the rename of `secret.tmp` to `secret`)."""
    last = False
    while not last:
        last = stop.is_set()
        for dirpath in (root, root / "eval"):
            try:
                entries = list(os.scandir(dirpath))
            except OSError:
                continue
            seen.setdefault(str(dirpath), set())
            with contextlib.suppress(OSError):
                seen[str(dirpath)].add(stat.S_IMODE(dirpath.stat().st_mode))
            for e in entries:
                try:
                    mode = stat.S_IMODE(e.stat(follow_symlinks=False).st_mode)
                except OSError:
                    continue
                seen.setdefault(e.name, set()).add(mode)


def test_secret_files_are_0600_at_every_moment(chisq: Built, tmp_path: Path) -> None:
    old_umask = os.umask(0o000)  # the most permissive umask: the modes must not depend on it
    try:
        for trial in range(5):
            keys = tmp_path / f"keys{trial}"
            seen: dict[str, set[int]] = {}
            stop = threading.Event()
            watcher = threading.Thread(target=_watch, args=(keys, stop, seen))
            watcher.start()
            try:
                proc = subprocess.run(
                    [str(chisq.binary), "keygen", "--out", str(keys)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
            finally:
                stop.set()
                watcher.join()
            assert proc.returncode == 0, proc.stderr
            assert seen.get("secret"), f"the watcher never saw the secret key: {seen}"
            for name, modes in seen.items():
                base = Path(name).name
                if base.startswith(SECRET_PREFIXES) and ".pub" not in base:
                    assert modes == {0o600}, (trial, name, sorted(oct(m) for m in modes))
                if name in (str(keys), str(keys / "eval")):
                    assert modes == {0o700}, (trial, name, sorted(oct(m) for m in modes))
            out = subprocess.run(
                ["stat", "-c", "%a %n", str(keys / "secret"), str(keys / "coordinator.sign"),
                 str(keys), str(keys / "eval")],
                capture_output=True, text=True, check=True,
            ).stdout.split()  # fmt: skip
            assert out[0::2] == ["600", "600", "700", "700"], out
    finally:
        os.umask(old_umask)


def test_signing_key_files(chisq: Built, tmp_path: Path) -> None:
    ok(chisq.binary, "signkey", "--out", str(tmp_path / "k.sign"))
    assert stat.S_IMODE((tmp_path / "k.sign").stat().st_mode) == 0o600
    assert (tmp_path / "k.sign.pub").read_text().startswith("hec-verify-key 1\n")
    done = subprocess.run(
        [str(chisq.binary), "signkey", "--out", str(tmp_path / "k.sign")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and "never overwrites" in done.stderr
