"""Regression tests of issue 25's "runs that cannot be mixed": every scenario in which the
generated program's roles used to return wrong answers with exit code 0 is now refused in one
line naming the file. Two data owners (A: rows 0:20, B: rows 20:40), a server and a
coordinator, each with an Ed25519 signing key registered in the run manifest."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import blake3
import numpy as np
from reliability_common import HALF, N, new_run, ok, reference, refused, role

from driver.run import Built


def test_two_owners_give_the_right_answer(chisq: Built, tmp_path: Path) -> None:
    run = new_run(chisq.binary, tmp_path / "run")
    ct, res, dec = tmp_path / "ct", tmp_path / "res", tmp_path / "dec"
    run.encrypt("A", ct)
    run.encrypt("B", ct)
    ok(chisq.binary, *run.compute_args(ct, res))
    ok(chisq.binary, *run.decrypt_args(res, dec))
    for name, want in reference(run.y, run.S).items():
        got = np.load(dec / f"{name}.npy")
        assert np.allclose(got, want, rtol=1e-3, atol=1e-3 * float(np.abs(want).max())), name


def test_missing_trailing_shard_is_refused(chisq: Built, tmp_path: Path) -> None:
    """Was: only owner A uploaded; compute derived N = 20 from what it found, exit 0."""
    run = new_run(chisq.binary, tmp_path / "run")
    ct, res = tmp_path / "ct", tmp_path / "res"
    run.encrypt("A", ct)
    line = refused(chisq.binary, *run.compute_args(ct, res))
    assert f"rows {HALF}:{N} are missing (data owner 'B')" in line
    assert not res.exists()


def test_missing_leading_shard_is_refused(chisq: Built, tmp_path: Path) -> None:
    run = new_run(chisq.binary, tmp_path / "run")
    ct, res = tmp_path / "ct", tmp_path / "res"
    run.encrypt("B", ct)
    line = refused(chisq.binary, *run.compute_args(ct, res))
    assert f"rows 0:{HALF} are missing (data owner 'A')" in line


def test_stale_upload_of_another_run_is_refused(chisq: Built, tmp_path: Path) -> None:
    """Was: owner B's upload of an earlier run was accepted (results off by up to 95%)."""
    old = new_run(chisq.binary, tmp_path / "old", seed=2)
    old.encrypt("B", tmp_path / "old-ct")
    run = new_run(chisq.binary, tmp_path / "run")
    ct, res = tmp_path / "ct", tmp_path / "res"
    run.encrypt("A", ct)
    for f in (tmp_path / "old-ct").iterdir():
        shutil.copy(f, ct / f.name)
    line = refused(chisq.binary, *run.compute_args(ct, res))
    assert f".rows-{HALF}-{N}.cts" in line and ("wrong keys" in line or "stale" in line)
    assert not res.exists()


def test_swapped_input_files_are_refused(chisq: Built, tmp_path: Path) -> None:
    """Was: the y and S .cts files swapped (their .meta left in place) computed garbage."""
    run = new_run(chisq.binary, tmp_path / "run")
    ct, res = tmp_path / "ct", tmp_path / "res"
    run.encrypt("A", ct)
    run.encrypt("B", ct)
    y, s = ct / f"y.rows-0-{HALF}.cts", ct / f"S.rows-0-{HALF}.cts"
    y.rename(tmp_path / "tmp.cts")
    s.rename(y)
    (tmp_path / "tmp.cts").rename(s)
    line = refused(chisq.binary, *run.compute_args(ct, res))
    assert "replaced or swapped" in line and ".rows-0-" in line


def test_duplicated_shard_is_refused(chisq: Built, tmp_path: Path) -> None:
    run = new_run(chisq.binary, tmp_path / "run")
    ct, res = tmp_path / "ct", tmp_path / "res"
    run.encrypt("A", ct)
    run.encrypt("B", ct)
    run.encrypt("B", tmp_path / "again", "--block-rows", "5")  # the same rows in other files
    for f in (tmp_path / "again").glob(f"*.rows-{HALF}-{HALF + 5}.cts*"):
        shutil.copy(f, ct / f.name)
    line = refused(chisq.binary, *run.compute_args(ct, res))
    assert "uploaded twice" in line


def test_extra_file_is_refused(chisq: Built, tmp_path: Path) -> None:
    run = new_run(chisq.binary, tmp_path / "run")
    ct, res = tmp_path / "ct", tmp_path / "res"
    run.encrypt("A", ct)
    run.encrypt("B", ct)
    shutil.copy(ct / f"y.rows-0-{HALF}.cts", ct / f"X.rows-0-{HALF}.cts")
    line = refused(chisq.binary, *run.compute_args(ct, res))
    assert "an extra file" in line and "X.rows-0-" in line


def _rewrite_meta(path: Path, change: dict[str, str]) -> None:
    """What a hostile party can do to a .meta: change fields and recompute the unkeyed
    checksum (the signature it cannot recompute)."""
    lines = path.read_text().splitlines(keepends=True)
    body = "".join(ln for ln in lines if not ln.startswith(("checksum ", "signature ")))
    for key, value in change.items():
        body = "".join(
            f"{key} {value}\n" if ln.startswith(f"{key} ") else ln
            for ln in body.splitlines(keepends=True)
        )
    digest = hashlib.blake2b(body.encode(), digest_size=32).hexdigest()
    sig = [ln for ln in lines if ln.startswith("signature ")]
    path.write_text(body + f"checksum {digest}\n" + "".join(sig))


def test_upload_claimed_by_another_owner_is_refused(chisq: Built, tmp_path: Path) -> None:
    """An upload whose metadata is changed (here: attributed to owner A) fails A's signature."""
    run = new_run(chisq.binary, tmp_path / "run")
    ct, res = tmp_path / "ct", tmp_path / "res"
    run.encrypt("A", ct)
    run.encrypt("B", ct)
    _rewrite_meta(ct / f"y.rows-{HALF}-{N}.cts.meta", {"owner": "A", "signer": "A"})
    line = refused(chisq.binary, *run.compute_args(ct, res))
    assert "signature" in line and f"y.rows-{HALF}-{N}.cts.meta" in line


def _results(chisq: Built, tmp_path: Path):
    run = new_run(chisq.binary, tmp_path / "run")
    ct, res = tmp_path / "ct", tmp_path / "res"
    run.encrypt("A", ct)
    run.encrypt("B", ct)
    ok(chisq.binary, *run.compute_args(ct, res))
    return run, res


def test_swapped_result_files_are_refused(chisq: Built, tmp_path: Path) -> None:
    """Was: chi2_num <-> chi2_den swapped (with their .meta) decrypted with exit 0."""
    run, res = _results(chisq, tmp_path)
    a, b = sorted(p.name[: -len(".cts")] for p in res.glob("*.cts"))[:2]
    for suffix in (".cts", ".cts.meta"):
        (res / f"{a}{suffix}").rename(tmp_path / "x")
        (res / f"{b}{suffix}").rename(res / f"{a}{suffix}")
        (tmp_path / "x").rename(res / f"{b}{suffix}")
    line = refused(chisq.binary, *run.decrypt_args(res, tmp_path / "dec"))
    assert "swapped or renamed result files" in line
    assert not (tmp_path / "dec").exists()


def test_forged_result_factor_is_refused(chisq: Built, tmp_path: Path) -> None:
    """Was: a hostile server changed a result's factor and recomputed the unkeyed BLAKE2b:
    chi2_num doubled, exit 0. The server's signature no longer verifies."""
    run, res = _results(chisq, tmp_path)
    meta = sorted(res.glob("*.cts.meta"))[0]
    factor = next(ln.split()[1] for ln in meta.read_text().splitlines() if ln.startswith("factor"))
    _rewrite_meta(meta, {"factor": repr(2 * float(factor))})
    line = refused(chisq.binary, *run.decrypt_args(res, tmp_path / "dec"))
    assert "signature of server does not verify" in line and meta.name in line


def test_replaced_result_content_is_refused(chisq: Built, tmp_path: Path) -> None:
    run, res = _results(chisq, tmp_path)
    a, b = sorted(res.glob("*.cts"))[:2]
    shutil.copy(b, a)  # a's metadata left in place
    line = refused(chisq.binary, *run.decrypt_args(res, tmp_path / "dec"))
    assert "replaced" in line and a.name in line


def test_results_of_another_run_are_refused(chisq: Built, tmp_path: Path) -> None:
    _, res = _results(chisq, tmp_path / "one")
    other = new_run(chisq.binary, tmp_path / "two")
    line = refused(chisq.binary, *other.decrypt_args(res, tmp_path / "dec"))
    assert "wrong keys" in line or "not of this run" in line


def test_unsigned_upload_is_refused(chisq: Built, tmp_path: Path) -> None:
    run = new_run(chisq.binary, tmp_path / "run")
    done = role(
        chisq.binary, "encrypt", "--pk", str(run.keys / "public"), "--owner", "A",
        *run.owner_files("A"), "--out", str(tmp_path / "ct"),
    )  # fmt: skip
    assert done.returncode == 2 and "give it with --sign FILE" in done.stderr
    assert not (tmp_path / "ct").exists()


def test_server_without_its_key_is_refused(chisq: Built, tmp_path: Path) -> None:
    run = new_run(chisq.binary, tmp_path / "run")
    ct = tmp_path / "ct"
    run.encrypt("A", ct)
    run.encrypt("B", ct)
    args = run.compute_args(ct, tmp_path / "res")
    i = args.index("--sign")
    line = refused(chisq.binary, *args[:i], *args[i + 2 :], "--sign", str(run.sign["A"]))
    assert "not the server key" in line


def _uploads(chisq: Built, tmp_path: Path):
    run = new_run(chisq.binary, tmp_path / "run")
    ct = tmp_path / "ct"
    run.encrypt("A", ct)
    run.encrypt("B", ct)
    return run, ct, sorted(p for p in ct.rglob("*.cts") if p.is_file())


def container_digest(body: bytes) -> bytes:
    """The container trailer of format 6 (runtime/core/serialize.h): BLAKE3-256 of header and
    payload, by the BLAKE3 team's own binding (the `blake3` package)."""
    return blake3.blake3(body).digest()


def format5_digest(body: bytes) -> bytes:
    """The trailer of format 5, for files of that version: SHA-256 of 0x01, the little-endian
    length and each 1 MiB chunk's SHA-256 of 0x00 and the chunk."""
    chunk = 1 << 20
    leaves = b"".join(
        hashlib.sha256(b"\x00" + body[at : at + chunk]).digest()
        for at in range(0, len(body), chunk)
    )
    return hashlib.sha256(b"\x01" + len(body).to_bytes(8, "little") + leaves).digest()


def _swap_on_open(tmp_path: Path, target: Path, replacement: Path) -> dict[str, str]:
    """The environment under which the role's first open(2) of `target` renames a copy of
    `replacement` over it (swap_on_open.c): after the role's checks of the file's signed
    metadata and trailer, before it reads the content."""
    shim = tmp_path / "swap_on_open.so"
    src = Path(__file__).with_name("swap_on_open.c")
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(shim), str(src), "-ldl"],
                   check=True)  # fmt: skip
    spare = tmp_path / f"spare-{target.name}"
    shutil.copy(replacement, spare)
    return {"LD_PRELOAD": str(shim), "HEC_SWAP_TARGET": target.name, "HEC_SWAP_WITH": str(spare)}


def test_upload_swapped_after_its_check_is_refused(chisq: Built, tmp_path: Path) -> None:
    """Was: compute compared each upload's signed digest with the file's trailer when it
    indexed the uploads, and later read the file checking it against its own trailer only: a
    valid file (here owner B's block of the same input, the same size) swapped in between
    computed with exit 0. The read itself now requires the signed digest."""
    run, ct, _ = _uploads(chisq, tmp_path)
    target, other = ct / f"S.rows-0-{HALF}.cts", ct / f"S.rows-{HALF}-{N}.cts"
    env = _swap_on_open(tmp_path, target, other)
    line = refused(chisq.binary, *run.compute_args(ct, tmp_path / "res"), env=env)
    assert target.name in line and "replaced after it was checked" in line, line
    assert target.read_bytes() == other.read_bytes()  # the swap did happen
    assert not (tmp_path / "res").exists()


def test_result_swapped_after_its_check_is_refused(chisq: Built, tmp_path: Path) -> None:
    """The same gap in decrypt (it checked a result's signed BLAKE2b, then read the file
    again): another valid result swapped in between is refused by the read."""
    run, res = _results(chisq, tmp_path)
    a, b = sorted(res.glob("*.cts"))[:2]
    assert a.stat().st_size == b.stat().st_size
    env = _swap_on_open(tmp_path, a, b)
    line = refused(chisq.binary, *run.decrypt_args(res, tmp_path / "dec"), env=env)
    assert a.name in line and "replaced after it was checked" in line, line
    assert not (tmp_path / "dec").exists()


def test_modified_upload_is_refused_even_with_its_digest_recomputed(
    chisq: Built, tmp_path: Path
) -> None:
    """An upload ends in the BLAKE3-256 digest of its content, which its owner's
    signed metadata binds: a changed byte breaks the digest, and a digest recomputed over the
    changed content no longer matches the signed one (XXH3-128, the trailer before format 3,
    was not cryptographic, so a recomputed or colliding trailer bound nothing)."""
    run, ct, files = _uploads(chisq, tmp_path)
    target = files[0]
    data = bytearray(target.read_bytes())
    assert container_digest(bytes(data[:-32])) == data[-32:]  # the helper is the format's digest
    data[100] ^= 1  # a payload byte (the header is 84 bytes)
    target.write_bytes(bytes(data))
    line = refused(chisq.binary, *run.compute_args(ct, tmp_path / "res"))
    assert target.name in line and ("checksum failure" in line or "not the one" in line), line
    # The digest recomputed over the changed content: the signed metadata still refuses it.
    body = bytes(data[:-32])
    target.write_bytes(body + container_digest(body))
    line = refused(chisq.binary, *run.compute_args(ct, tmp_path / "res2"))
    assert target.name in line and "not the one its metadata" in line, line


def test_upload_of_an_older_format_is_refused_by_its_version(chisq: Built, tmp_path: Path) -> None:
    """A container of format version 2 (a 16-byte XXH3-128 trailer) is refused naming the
    version, not as truncated."""
    run, ct, files = _uploads(chisq, tmp_path)
    target = files[0]
    data = bytearray(target.read_bytes()[:-16])
    data[4:8] = (2).to_bytes(4, "little")
    target.write_bytes(bytes(data))
    line = refused(chisq.binary, *run.compute_args(ct, tmp_path / "res"))
    assert "unsupported format version 2" in line and "an older hec wrote it" in line, line


def test_upload_of_format_5_is_refused_by_its_version(chisq: Built, tmp_path: Path) -> None:
    """A container of format version 5 (the chunked SHA-256 trailer, before BLAKE3) is refused
    naming its version and this build's, even with a trailer that is right for version 5."""
    run, ct, files = _uploads(chisq, tmp_path)
    target = files[0]
    data = bytearray(target.read_bytes()[:-32])
    data[4:8] = (5).to_bytes(4, "little")
    target.write_bytes(bytes(data) + format5_digest(bytes(data)))
    line = refused(chisq.binary, *run.compute_args(ct, tmp_path / "res"))
    assert "unsupported format version 5" in line and "reads version 6" in line, line
    assert "an older hec wrote it" in line, line
