"""Where a scaled-out run keeps its shared files: a local directory or an fsspec URL (issue 26,
docs/scale-out.md).

The block store (`--store`) and the bank of a Dask run (`--bank`: plaintext block inputs,
ciphertexts, results) are each a `Location`: a plain path (the local file system, or a shared
one mounted at the same path everywhere) or a URL that fsspec opens (`file://`, `s3://`,
`gs://`, `abfs://`, ... with the protocol's package installed on every machine that reads or
writes it). Two rules carry the run's guarantees over to any of them:

- **Atomic files.** On a local file system a file is written under a temporary name, flushed
  and renamed; any other file system gets one whole-object write (`pipe_file`), which object
  stores make atomic (a reader sees the old object or the new one, never half of one).
- **Roles run on local files.** The generated program reads and writes local files only, so a
  task whose bank is a URL copies what its role reads into the worker's own scratch
  (`fetch`) and writes what the role made back to the bank (`upload`); a plain path is used in
  place. A URL bank thus needs no file system shared between the machines.

Errors (an unknown protocol, a protocol whose package is missing, a location that cannot be
read or written) are `UserError`s naming the location as the user gave it.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.errors import UserError


def is_url(text: str) -> bool:
    """A location fsspec opens (`PROTOCOL://...`, chained `A::B`), not a plain path."""
    return "://" in text or "::" in text


@dataclass(frozen=True)
class Location:
    """A directory or file: `path` on the file system `fs` (fsspec), named `text` in errors.
    `url` is what another process (a Dask worker) opens it by again."""

    text: str
    url: str
    fs: Any
    path: str

    @property
    def local(self) -> Path | None:
        """The local path, when the file system is this machine's (plain paths, file://)."""
        from fsspec.implementations.local import LocalFileSystem

        return Path(self.path) if isinstance(self.fs, LocalFileSystem) else None

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def child(self, *names: str) -> Location:
        text = "/".join([self.text.rstrip("/"), *names])
        url = "/".join([self.url.rstrip("/"), *names])
        return Location(text, url, self.fs, "/".join([self.path.rstrip("/"), *names]))

    def __str__(self) -> str:
        return self.text

    def exists(self) -> bool:
        return bool(self._call("read", self.fs.exists, self.path))

    def is_dir(self) -> bool:
        return bool(self._call("read", self.fs.isdir, self.path))

    def is_file(self) -> bool:
        return bool(self._call("read", self.fs.isfile, self.path))

    def names(self) -> list[str]:
        """The names of the entries of this directory (none when it does not exist)."""
        if not self.is_dir():
            return []
        entries = self._call("list", self.fs.ls, self.path, detail=False)
        return sorted(str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries)

    def read_bytes(self) -> bytes:
        return bytes(self._call("read", self.fs.cat_file, self.path))

    def read_text(self) -> str:
        return self.read_bytes().decode()

    def makedirs(self) -> None:
        self._call("create", self.fs.makedirs, self.path, exist_ok=True)

    def write_atomic(self, data: bytes, mode: int | None = None) -> None:
        """The whole of `data` or nothing: rename on a local file system, one object write
        elsewhere (see the module). `mode`: the file's permission bits on a local file system
        from its creation on (object stores have none)."""
        local = self.local
        if local is None:
            self._call("write", self.fs.pipe_file, self.path, data)
            return
        try:
            local.parent.mkdir(parents=True, exist_ok=True)
            write_file_atomic(local, data, mode)
        except OSError as err:
            raise UserError(f"{self.text}: cannot write ({err.strerror or err})") from err

    def remove(self, recursive: bool = False) -> None:
        """Delete this file (or directory tree); nothing when it is not there."""
        try:
            self.fs.rm(self.path, recursive=recursive)
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as err:
            raise self._error("remove", err) from err

    def remove_if_empty(self) -> None:
        """Delete this directory if it holds nothing: on a local file system at once (rmdir),
        so a file written meanwhile is never deleted with it; elsewhere (no directories, only
        prefixes) when it lists nothing."""
        local = self.local
        if local is not None:
            with contextlib.suppress(OSError):
                local.rmdir()
        elif not self.names():
            self.remove(recursive=True)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (OSError, ValueError) as err:  # fsspec's back ends raise OSError subclasses
            raise self._error(what, err) from err

    def _error(self, what: str, err: BaseException) -> UserError:
        return UserError(
            f"{self.text}: cannot {what} ({type(err).__name__}: {err})",
            hint="check that the location exists and this machine can reach it",
        )


def write_file_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write `data` to the local file `path` whole or not at all: a temporary name beside it
    (created with `mode`, exactly, when given: a private file is never readable by others),
    flushed to the disk, renamed over `path`; the temporary file is removed on any failure."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(fd, mode)  # exactly `mode`, whatever the umask
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def flush_files(directory: Path) -> None:
    """fdatasync every regular file in `directory` (not following symbolic links)."""
    for f in directory.iterdir():
        if f.is_symlink() or not f.is_file():
            continue
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)


def locate(text: str, option: str = "") -> Location:
    """The location `text` (a plain path or an fsspec URL). `option` (e.g. "--bank") is named
    in the errors: an unknown protocol, or one whose package is not installed here."""
    import fsspec.core

    label = f"{option} {text}" if option else text
    if not is_url(text):
        path = str(Path(text).expanduser().resolve())
        fs, _ = fsspec.core.url_to_fs(path)
        return Location(label, path, fs, path)
    try:
        fs, path = fsspec.core.url_to_fs(text)
    except ImportError as err:
        raise UserError(
            f"{label}: the file system of this URL needs a package that is not installed "
            f"here ({err})",
            hint="install the fsspec implementation of the protocol (e.g. s3fs for s3://) on "
            "this machine and on every Dask worker",
        ) from err
    except (ValueError, KeyError) as err:
        protocol = text.split("://", 1)[0]
        raise UserError(
            f"{label}: no fsspec file system for the protocol {protocol!r} ({err})",
            hint="a plain path, or a URL such as file:///shared/run or s3://bucket/run",
        ) from err
    except OSError as err:
        raise UserError(f"{label}: cannot open ({type(err).__name__}: {err})") from err
    return Location(label, text, fs, str(path))


def check_writable(location: Location) -> None:
    """Create the directory and write and delete a probe file there, or raise naming it."""
    location.makedirs()
    probe = location.child(f".probe-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    probe.write_atomic(b"")
    probe.remove()


# Files fetched by this process (a Dask worker): url -> local path, kept while it serves the
# run they belong to (the program and the key set, the same for every task of a run); the
# oldest are dropped beyond CACHED (the program and keys of two runs), all at exit.
_FETCHED: dict[str, Path] = {}
CACHED = 4


def worker_cache() -> Path:
    """This process's directory for fetched files (HEC_SCRATCH or the system's temp), removed
    when the process exits."""
    base = Path(os.environ.get("HEC_SCRATCH") or tempfile.gettempdir())
    directory = base / f"hec-worker-{os.getpid()}"
    if not directory.is_dir():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        atexit.register(shutil.rmtree, directory, True)
    return directory


def fetch(url: str, into: Path | None = None, *, cache: bool = False) -> Path:
    """A local copy of the file or directory at `url` (a plain path: itself, nothing copied).
    `into`: where to put the copy (default: in this process's cache); `cache`: keep it for
    later calls with the same URL (the program, the keys)."""
    if not is_url(url):
        return Path(url)
    if cache and url in _FETCHED and _FETCHED[url].exists():
        return _FETCHED[url]
    source = locate(url)
    if into is None:
        into = worker_cache() / hashlib.sha256(url.encode()).hexdigest()[:16] / source.name
    into.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        into.mkdir(parents=True, exist_ok=True)
        for name in source.names():
            fetch(source.child(name).url, into / name)
    else:
        into.write_bytes(source.read_bytes())
    if cache:
        _FETCHED[url] = into
        while len(_FETCHED) > CACHED:  # dicts keep insertion order: the oldest first
            old = _FETCHED.pop(next(iter(_FETCHED)))
            if old.is_relative_to(worker_cache()):  # only what fetch put there itself
                if old.is_dir():
                    shutil.rmtree(old, True)
                else:
                    old.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    old.parent.rmdir()
    return into


def upload(local: Path, target: Location) -> None:
    """Copy the local file or directory tree `local` to `target`, file by file (each file one
    atomic write). On a local or mounted file system the permission bits are kept (the
    program stays executable, the signing keys private); object stores have none."""
    if local.is_dir():
        target.makedirs()
        for entry in sorted(local.iterdir()):
            upload(entry, target.child(entry.name))
    else:
        target.write_atomic(local.read_bytes(), local.stat().st_mode & 0o777)
    if target.local is not None and local.is_dir():
        target.local.chmod(local.stat().st_mode & 0o777)
