"""Scheme records: what the compiler knows of each RLWE scheme it targets, in one place.

The HE layer (`he` dialect) is scheme-agnostic; what an op MEANS in a scheme comes from its
record here: whether the scheme computes exactly (on integers modulo t) or approximately (on
reals with a scale), the largest ciphertext degree it multiplies and decrypts (which
lazy-relinearization keeps to), whether it has the coefficient encoding of packed counts, and
the passes that lower the HE layer to the scheme and choose its parameters (noise or scale
model, parameter search, keys). The driver (driver/pipeline.py) runs the stat passes, the
lowering to the HE layer and lazy-relinearization once for the scheme, then the record's
passes; `--scheme auto` compares the records' cost estimates (targets/report) at the sizes
of the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.passes import ModulePass

from passes.bfv_mod_switch import BfvModSwitchPass
from passes.bfv_parameters import BfvParametersPass
from passes.complex_packing import ComplexPackingPass, SearchMemo, search_passes
from passes.level_assignment import LevelAssignmentPass
from passes.lower_he_to_bfv import LowerHeToBfvPass
from passes.lower_he_to_ckks import LowerHeToCkksPass
from passes.rescale_placement import RescalePlacementPass
from passes.rotation_keys import RotationKeysPass


@dataclass(frozen=True)
class Settings:
    """The options the scheme passes read (the driver's Options, typed for passes/)."""

    sizes: str = ""
    precision_bits: float = 19.0
    precision: str = ""
    failure_log2: float = -32.0  # each revealed value's error bound fails with 2^this
    flooding_bits: float = (
        0.0  # what decrypt's noise flooding costs every output (targets hold after it)
    )
    log_n: int = 0
    key_memory_mib: float = 0.0  # the evaluation keys' budget (passes/rotation_keys.py)
    staged_sums: bool = True  # slot sums in doubly hoisted stages (passes/rotation_keys.py)
    insecure: bool = False
    complex_packing: bool = True  # decided inside the compilation (passes/complex_packing.py)
    search_memo: SearchMemo | None = field(default=None, compare=False)  # its searches, reused


@dataclass(frozen=True)
class Scheme:
    name: str
    exact: bool  # integers modulo t, exactly; else reals with a scale, approximately
    max_degree: int  # the largest degree it multiplies into and decrypts
    packed_counts: bool  # the coefficient encoding of packed integer counts (layout coeff)
    passes: Callable[[Settings], list[ModulePass]]
    description: str


def _ckks_passes(s: Settings) -> list[ModulePass]:
    return [
        LowerHeToCkksPass(),
        RescalePlacementPass(),
        LevelAssignmentPass(),
        ComplexPackingPass(
            enabled=s.complex_packing,
            sizes=s.sizes,
            precision_bits=s.precision_bits,
            precision=s.precision,
            log_n=s.log_n,
            insecure=s.insecure,
            memo=s.search_memo,
            failure_log2=s.failure_log2,
            flooding_bits=s.flooding_bits,
        ),
        *search_passes(
            s.precision_bits, s.precision, s.log_n, s.insecure, s.failure_log2, s.flooding_bits
        ),
        RotationKeysPass(key_memory_mib=s.key_memory_mib, staged=s.staged_sums),
    ]


def _bfv_passes(s: Settings) -> list[ModulePass]:
    return [
        LowerHeToBfvPass(),
        BfvParametersPass(log_n=s.log_n, insecure=s.insecure),
        BfvModSwitchPass(),
    ]


CKKS = Scheme(
    name="ckks",
    exact=False,
    max_degree=4,
    packed_counts=True,
    passes=_ckks_passes,
    description="RNS-CKKS: approximate arithmetic on reals (precision promised per output)",
)
BFV = Scheme(
    name="bfv",
    exact=True,
    max_degree=2,
    packed_counts=False,
    passes=_bfv_passes,
    description="BFV (HPS): exact arithmetic on integers modulo a plaintext modulus",
)
SCHEMES: dict[str, Scheme] = {s.name: s for s in (CKKS, BFV)}
