"""The cost profile: the measured per-operation costs the cost model (compiler/analysis/cost.py)
and the report's time and memory estimates convert counts into seconds and bytes with.

A profile is a versioned JSON file (FORMAT, VERSION) written by `hec calibrate`
(driver/calibrate.py), which measures this machine's runtime; the shipped default
(default_profile.json, next to this file) holds the constants measured by hand on the development
machine. Which profile is used (`resolve`): `--profile PATH` on the command line, else the
HEC_PROFILE environment variable (a path, or `default`), else the user's profile at
$XDG_CONFIG_HOME/hec/profile.json (~/.config/hec/profile.json) when it exists, else the default.
A profile given explicitly that cannot be read, has another format or version, or was measured
on another CPU is an error; the user's profile measured on another CPU is passed over for the
default, and the profile's `note` says so (the report prints it).

Tables keyed by ring dimension (log2 n) answer for an unmeasured ring with the nearest measured
one (the larger on a tie).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from compiler.errors import UserError

FORMAT = "hec-cost-profile"
VERSION = 1
DEFAULT_PATH = Path(__file__).resolve().parent / "default_profile.json"

# The tables every profile has: (key, kind of key). "log_n": by ring dimension; "scheme": by
# scheme name ckks / bfv; "threads": by thread count.
_TABLES: dict[str, str] = {
    "ntt_ns_per_butterfly": "log_n",
    "pointwise_ns_per_coefficient": "log_n",
    "ckks_key_switch_factor": "log_n",
    "ckks_tensor_factor": "log_n",
    "ckks_rescale_factor": "log_n",
    "bfv_multiply_factor": "log_n",
    "bfv_key_switch_factor": "log_n",
    "encrypt_ns_per_word": "scheme",
    "read_ns_per_byte": "scheme",
    "compute_fixed_seconds": "scheme",
    "fhew_gate_seconds": "threads",
}
# Tables whose values may be 0 (a cost not measured in the default: none charged).
_ZERO_ALLOWED = {"compute_fixed_seconds"}
_SCHEMES = ("ckks", "bfv")


class ProfileError(UserError):
    """A cost profile that cannot be used: unreadable, malformed, another version or machine."""


@dataclass(frozen=True)
class Profile:
    """One machine's measured costs. `source`: the file it was read from ("default" for the
    shipped one); `note`: why it is in use when another was looked for, else ""."""

    source: str
    created: str
    machine: Mapping[str, str]
    runtime_digest: str
    tables: Mapping[str, Mapping[int | str, float]]
    runtime_baseline_bytes: int
    load: tuple[float, ...]
    note: str = ""

    @property
    def is_default(self) -> bool:
        return self.source == "default"

    def by_log_n(self, table: str, log_n: int) -> float:
        """The table's value for ring dimension 2^log_n (the nearest measured ring)."""
        values = self.tables[table]
        nearest = min(values, key=lambda k: (abs(int(k) - log_n), -int(k)))
        return values[nearest]

    def by_scheme(self, table: str, scheme: str) -> float:
        return self.tables[table][scheme]

    def describe(self) -> dict[str, Any]:
        """What the report says about the profile it used."""
        return {
            "source": self.source,
            "created": self.created,
            "cpu": self.machine.get("cpu", ""),
            "machine_id": self.machine.get("id", ""),
            "runtime_digest": self.runtime_digest,
            "load": list(self.load),
            "note": self.note,
        }


def _fail(source: str, what: str) -> ProfileError:
    return ProfileError(
        f"cost profile {source}: {what}",
        hint="run `hec calibrate` to measure a new one, or pass --profile default "
        "(HEC_PROFILE=default) for the shipped default",
    )


def _number(source: str, where: str, value: object, zero: bool = False) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (value > 0 or (zero and value == 0))
    ):
        kind = "a number >= 0" if zero else "a positive number"
        raise _fail(source, f"{where} must be {kind}, got {value!r}")
    if value != value or value == float("inf"):
        raise _fail(source, f"{where} must be finite, got {value!r}")
    return float(value)


def parse(obj: object, source: str) -> Profile:
    """A Profile from the JSON object of a profile file; ProfileError naming `source` and the
    first thing wrong when it is not one."""
    if not isinstance(obj, dict):
        raise _fail(source, "not a JSON object")
    if obj.get("format") != FORMAT:
        raise _fail(
            source, f"not a hec cost profile (format {obj.get('format')!r}, want {FORMAT!r})"
        )
    if obj.get("version") != VERSION:
        raise _fail(
            source,
            f"profile version {obj.get('version')!r}; this hec reads version {VERSION}",
        )
    machine = obj.get("machine")
    if not isinstance(machine, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in machine.items()
    ):
        raise _fail(source, "'machine' must be an object of strings (cpu, id)")
    digest = obj.get("runtime_digest")
    created = obj.get("created")
    if not isinstance(digest, str) or not isinstance(created, str):
        raise _fail(source, "'runtime_digest' and 'created' must be strings")
    model = obj.get("model")
    if not isinstance(model, dict):
        raise _fail(source, "'model' (the measured costs) is missing")
    tables: dict[str, dict[int | str, float]] = {}
    for name, kind in _TABLES.items():
        raw = model.get(name)
        if not isinstance(raw, dict) or not raw:
            raise _fail(source, f"model.{name} is missing or empty")
        table: dict[int | str, float] = {}
        for key, value in raw.items():
            where = f"model.{name}[{key!r}]"
            if kind == "scheme":
                table[key] = _number(source, where, value, zero=name in _ZERO_ALLOWED)
                continue
            if not (isinstance(key, str) and key.isdigit()):
                raise _fail(source, f"{where}: the key must be a {kind.replace('_', ' ')}")
            table[int(key)] = _number(source, where, value)
        if kind == "scheme" and set(table) != set(_SCHEMES):
            raise _fail(source, f"model.{name} must give {' and '.join(_SCHEMES)}")
        tables[name] = table
    baseline = _number(source, "model.runtime_baseline_bytes", model.get("runtime_baseline_bytes"))
    load = obj.get("load", [])
    if not isinstance(load, list) or not all(isinstance(x, int | float) for x in load):
        raise _fail(source, "'load' must be a list of numbers")
    return Profile(
        source=source,
        created=created,
        machine=dict(machine),
        runtime_digest=digest,
        tables=tables,
        runtime_baseline_bytes=int(baseline),
        load=tuple(float(x) for x in load),
    )


def load(path: Path) -> Profile:
    """Read and check the profile at `path` (not its machine: see `check_machine`)."""
    try:
        text = path.read_text()
    except OSError as err:
        raise _fail(str(path), f"cannot be read ({err.strerror or err})") from err
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise _fail(str(path), f"is not JSON ({err.msg} at line {err.lineno})") from err
    return parse(obj, str(path))


def default() -> Profile:
    return replace(load(DEFAULT_PATH), source="default")


def machine_info(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """This machine's CPU as a profile records it: the model name, the instruction-set
    extensions the runtime dispatches on, the logical CPUs, and an id hashing them."""
    name, flags, cpus = "unknown", set[str](), 0
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name") and name == "unknown":
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
            elif line.startswith("processor"):
                cpus += 1
    except OSError:
        pass
    isa = " ".join(f for f in ("avx2", "avx512f", "avx512ifma") if f in flags)
    ident = hashlib.sha256(f"{name}|{isa}|{cpus}".encode()).hexdigest()[:16]
    return {"cpu": name, "isa": isa, "cpus": str(cpus), "id": ident}


def check_machine(profile: Profile, here: Mapping[str, str]) -> None:
    """ProfileError unless `profile` was measured on a machine with this CPU id."""
    if profile.machine.get("id") != here.get("id"):
        raise _fail(
            profile.source,
            f"measured on another machine ({profile.machine.get('cpu', '?')}, "
            f"{profile.machine.get('cpus', '?')} CPUs, id {profile.machine.get('id', '?')}); "
            f"this one is {here.get('cpu', '?')}, {here.get('cpus', '?')} CPUs, id "
            f"{here.get('id', '?')}",
        )


def user_profile_path() -> Path:
    """Where `hec calibrate` stores the profile by default (XDG base directories)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hec" / "profile.json"


def resolve(explicit: str | None = None) -> Profile:
    """The profile to use (see the module docstring): `explicit` is --profile's value."""
    given = explicit or os.environ.get("HEC_PROFILE") or ""
    if given == "default":
        return default()
    if given:
        profile = load(Path(given))
        check_machine(profile, machine_info())
        return profile
    path = user_profile_path()
    if not path.exists():
        return default()
    profile = load(path)
    try:
        check_machine(profile, machine_info())
    except ProfileError as err:
        return replace(default(), note=f"{err.message}; using the shipped default")
    return profile


_active: Profile | None = None


def active() -> Profile:
    """The profile in use in this process (resolved on first use)."""
    global _active
    if _active is None:
        _active = resolve()
    return _active


def use(profile: Profile | None) -> None:
    """Make `profile` the one in use (None: resolve again on next use)."""
    global _active
    _active = profile
