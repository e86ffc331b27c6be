"""End-to-end: every example compiled to C++, built, and run by its four roles on encrypted
data (DESIGN.md §9, three-way oracle: plaintext reference, simulator, encrypted run), plus the
security and robustness acceptance of issue 7: the server runs with the public and evaluation
keys only and never touches the secret key; wrong keys, a ciphertext from another program, a
truncated file and a missing input each get their own error and leave no output behind."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cpp_target_common import EXAMPLES, ROOT, example_inputs, rel_error

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of
from driver.run import Built, compile_cpp, run_sim
from hec.cli import main


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    base = tmp_path_factory.mktemp("programs")
    return {
        path: compile_cpp(
            ROOT / path, base / Path(path).stem, Options(sizes=Sizes.parse(sizes), flooding=False)
        )
        for path, sizes in EXAMPLES
    }


def role(binary: Path, *args: str, quiet: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HEC_QUIET": "1" if quiet else "0"}
    return subprocess.run(
        [str(binary), *args], capture_output=True, text=True, check=False, env=env
    )


def ok(binary: Path, *args: str) -> str:
    done = role(binary, *args)
    assert done.returncode == 0, done.stderr
    return done.stderr


def all_roles(
    binary: Path, inputs: dict[str, Path], work: Path, sizes: dict[str, int] | None = None
) -> Path:
    """keygen (fixing `sizes`: those no upload carries), encrypt, compute, decrypt."""
    fixed = [a for name, v in (sizes or {}).items() for a in ("--size", f"{name}={v}")]
    ok(binary, "keygen", "--out", str(work / "keys"), *fixed)
    enc = [a for name, f in inputs.items() for a in ("--input", f"{name}={f}")]
    ok(binary, "encrypt", "--pk", str(work / "keys" / "public"), *enc, "--out", str(work / "ct"))
    ok(
        binary,
        "compute",
        "--eval",
        str(work / "keys" / "eval"),
        "--in",
        str(work / "ct"),
        "--out",
        str(work / "res"),
    )
    ok(
        binary,
        "decrypt",
        "--sk",
        str(work / "keys" / "secret"),
        "--in",
        str(work / "res"),
        "--out",
        str(work / "dec"),
        "--no-flooding",  # the oracle compares exact values
    )
    return work / "dec"


@pytest.mark.parametrize(("path", "sizes"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_three_way_agreement(
    programs: dict[str, Built], path: str, sizes: str, tmp_path: Path
) -> None:
    files, ref, _ = example_inputs(path, sizes, tmp_path / "in", seed=11)
    dec = all_roles(programs[path].binary, files, tmp_path)
    sim = run_sim(ROOT / path, files, tmp_path / "sim")
    promised = {
        o["name"]: o
        for o in report_of(
            compile_file(ROOT / path, Options(sizes=Sizes.parse(sizes), flooding=False))
        )["outputs"]
    }
    for name, want in ref.revealed.items():
        got = np.load(dec / f"{name}.npy")
        assert got.shape == np.shape(want), name
        # simulator (exact) = plaintext to 1e-9; encrypted within the promised precision.
        assert rel_error(sim.revealed[name], want) <= 1e-9, name
        o = promised[name]
        bound = max(abs(o["range"][0]), abs(o["range"][1]))
        err = float(np.max(np.abs(got - want)))
        assert err <= bound * 2.0 ** -o["precision_bits"], (name, err, bound, o["precision_bits"])
        assert err > 0.0, f"{name}: an encrypted result without any CKKS error is suspicious"


COMPLEX = ("tests/targets/cpp_target/complex_sums.hec", "N=12,M=9000")


def test_three_way_agreement_complex_packed(tmp_path: Path) -> None:
    # The complex layout end to end: encryption two slot sets per ciphertext, the server's
    # unpacks (conjugation keys), a complex decryption, against the plaintext and simulator.
    path, sizes = COMPLEX
    comp = compile_file(ROOT / path, Options(sizes=Sizes.parse(sizes)))
    report = report_of(comp)
    assert report["keys"]["conjugation"] and report["counts"]["static"]["conjugate"] > 0
    layouts = {o["name"]: o["layout"] for o in report["outputs"]}
    assert layouts["s"] == "complex" and layouts["p"] == "packed"
    built = compile_cpp(ROOT / path, tmp_path / "prog", Options(sizes=Sizes.parse(sizes)))
    files, ref, _ = example_inputs(path, sizes, tmp_path / "in", seed=13)
    dec = all_roles(built.binary, files, tmp_path)
    sim = run_sim(ROOT / path, files, tmp_path / "sim")
    for o in report["outputs"]:
        name, want = o["name"], ref.revealed[o["name"]]
        got = np.load(dec / f"{name}.npy")
        assert got.shape == np.shape(want), name
        assert rel_error(sim.revealed[name], want) <= 1e-9, name
        bound = max(abs(o["range"][0]), abs(o["range"][1]))
        err = float(np.max(np.abs(got - want)))
        assert 0.0 < err <= bound * 2.0 ** -o["precision_bits"], (name, err, bound)


def test_hec_run_encrypted_writes_client_outputs(tmp_path: Path) -> None:
    path, sizes = EXAMPLES[0]
    files, ref, _ = example_inputs(path, sizes, tmp_path / "in", seed=5)
    args = ["run", str(ROOT / path), "--out", str(tmp_path / "out"), "--size", sizes]
    for name, f in files.items():
        args += ["--input", f"{name}={f}"]
    assert main(args) == 0
    for name, want in ref.client.items():
        got = np.load(tmp_path / "out" / f"{name}.npy")
        finite = np.isfinite(want) & (np.abs(want) < 1e6)
        assert np.allclose(got[finite], want[finite], rtol=1e-3, atol=1e-4), name
    assert '"backend": "encrypted"' in (tmp_path / "out" / "summary.json").read_text()
    # The client block ran on the decrypted values (not on the plaintext inputs).
    out = tmp_path / "out"
    num, den = np.load(out / "chi2_num.npy"), np.load(out / "chi2_den.npy")
    with np.errstate(divide="ignore", invalid="ignore"):
        assert np.array_equal(np.load(out / "chi2.npy"), num / den, equal_nan=True)
    assert not np.array_equal(num, ref.revealed["chi2_num"])


def test_compute_runs_with_public_and_evaluation_keys_only(
    programs: dict[str, Built], tmp_path: Path
) -> None:
    path, sizes = EXAMPLES[2]  # grs: relinearization and rotation keys
    binary = programs[path].binary
    files, ref, _ = example_inputs(path, sizes, tmp_path / "in")
    ok(binary, "keygen", "--out", str(tmp_path / "keys"))
    server = tmp_path / "server"
    server.mkdir()
    shutil.copytree(tmp_path / "keys" / "eval", server / "eval")
    assert sorted(p.name for p in (server / "eval").iterdir()) == [
        "galois",
        "keyset",
        "manifest",
        "relin",
    ]
    enc = [a for name, f in files.items() for a in ("--input", f"{name}={f}")]
    ok(
        binary,
        "encrypt",
        "--pk",
        str(tmp_path / "keys" / "public"),
        *enc,
        "--out",
        str(server / "ct"),
    )
    # The secret key is moved out of the key directory (file modes mean nothing to root);
    # compute must not need it, and (where strace works) it opens no file named secret.
    secret = tmp_path / "keys" / "secret"
    vault = tmp_path / "vault"
    vault.mkdir()
    secret.rename(vault / "sk")
    try:
        compute = [
            str(binary),
            "compute",
            "--eval",
            str(server / "eval"),
            "--in",
            str(server / "ct"),
            "--out",
            str(server / "res"),
        ]
        strace = shutil.which("strace")
        traced = False
        if strace is not None:
            log = tmp_path / "strace.log"
            done = subprocess.run(
                [strace, "-f", "-e", "trace=open,openat", "-o", str(log), *compute],
                capture_output=True,
                text=True,
                check=False,
            )
            traced = done.returncode == 0 and log.is_file()
            if traced:
                opened = [ln for ln in log.read_text().splitlines() if "open" in ln]
                assert opened, "strace saw no open calls"
                assert not [ln for ln in opened if "secret" in ln or "vault" in ln]
        if not traced:
            ok(binary, *compute[1:])
    finally:
        (vault / "sk").rename(secret)
    assert not any("secret" in p.name for p in server.rglob("*"))
    ok(
        binary,
        "decrypt",
        "--sk",
        str(secret),
        "--in",
        str(server / "res"),
        "--out",
        str(tmp_path / "dec"),
        "--no-flooding",  # the oracle compares exact values
    )
    assert rel_error(np.load(tmp_path / "dec" / "score.npy"), ref.revealed["score"]) < 1e-4
    # The server role does not even accept a secret key.
    done = role(
        binary,
        "compute",
        "--eval",
        str(server / "eval"),
        "--in",
        str(server / "ct"),
        "--out",
        str(tmp_path / "r2"),
        "--sk",
        str(secret),
    )
    assert done.returncode == 2
    assert "unknown option --sk" in done.stderr


def test_only_the_needed_evaluation_keys_are_written(
    programs: dict[str, Built], tmp_path: Path
) -> None:
    ok(programs[EXAMPLES[0][0]].binary, "keygen", "--out", str(tmp_path / "k"))
    assert sorted(p.name for p in (tmp_path / "k" / "eval").iterdir()) == ["keyset", "manifest"]
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == [
        "coordinator.sign",
        "coordinator.sign.pub",
        "eval",
        "manifest",
        "public",
        "secret",
    ]
    assert (tmp_path / "k" / "secret").stat().st_mode & 0o077 == 0


@pytest.fixture
def chisq_run(programs: dict[str, Built], tmp_path: Path) -> tuple[Path, Path, dict[str, Path]]:
    binary = programs[EXAMPLES[0][0]].binary
    files, _, _ = example_inputs(*EXAMPLES[0], tmp_path / "in")
    ok(binary, "keygen", "--out", str(tmp_path / "keys"))
    enc = [a for name, f in files.items() for a in ("--input", f"{name}={f}")]
    ok(
        binary,
        "encrypt",
        "--pk",
        str(tmp_path / "keys" / "public"),
        *enc,
        "--out",
        str(tmp_path / "ct"),
    )
    return binary, tmp_path, files


def compute_error(binary: Path, keys: Path, ct: Path, out: Path) -> str:
    done = role(binary, "compute", "--eval", str(keys / "eval"), "--in", str(ct), "--out", str(out))
    assert done.returncode == 1, done.stderr
    assert not out.exists(), "a failed compute must leave no result directory"
    return done.stderr


def test_wrong_keys_are_refused(chisq_run: tuple[Path, Path, dict[str, Path]]) -> None:
    binary, tmp, _ = chisq_run
    ok(binary, "keygen", "--out", str(tmp / "other"))
    message = compute_error(binary, tmp / "other", tmp / "ct", tmp / "res")
    assert "wrong keys" in message and "key id" in message
    # And the coordinator's decrypt refuses results made under other keys.
    ok(
        binary,
        "compute",
        "--eval",
        str(tmp / "keys" / "eval"),
        "--in",
        str(tmp / "ct"),
        "--out",
        str(tmp / "res"),
    )
    done = role(
        binary,
        "decrypt",
        "--sk",
        str(tmp / "other" / "secret"),
        "--in",
        str(tmp / "res"),
        "--out",
        str(tmp / "dec"),
    )
    assert done.returncode == 1 and "wrong keys" in done.stderr
    assert not (tmp / "dec").exists()


def test_ciphertext_from_another_program_is_refused(
    chisq_run: tuple[Path, Path, dict[str, Path]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    binary, tmp, files = chisq_run
    # Another program with the same inputs (y, S) and the same parameters' shape.
    other_src = tmp / "other.hec"
    text = (ROOT / EXAMPLES[0][0]).read_text()
    other_src.write_text(
        text.replace("reveal or_den   = (c1 - n11) * (r1 - n11)", "reveal or_den = c1 * r1")
    )
    other = compile_cpp(other_src, tmp / "other-build", Options(sizes=Sizes.parse(EXAMPLES[0][1])))
    ok(other.binary, "keygen", "--out", str(tmp / "okeys"))
    enc = [a for name, f in files.items() for a in ("--input", f"{name}={f}")]
    ok(
        other.binary,
        "encrypt",
        "--pk",
        str(tmp / "okeys" / "public"),
        *enc,
        "--out",
        str(tmp / "oct"),
    )
    message = compute_error(binary, tmp / "keys", tmp / "oct", tmp / "res")
    assert "made for program 'other'" in message and "another program" in message
    # Its keys are refused too (the keyset names the program).
    message = compute_error(binary, tmp / "okeys", tmp / "ct", tmp / "res")
    assert "another program" in message


def test_truncated_ciphertext_file_is_refused(
    chisq_run: tuple[Path, Path, dict[str, Path]],
) -> None:
    binary, tmp, _ = chisq_run
    victim = next((tmp / "ct").glob("S.rows-*.cts"))
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 3])
    message = compute_error(binary, tmp / "keys", tmp / "ct", tmp / "res")
    assert "truncated" in message and victim.name in message


def test_missing_input_is_refused(chisq_run: tuple[Path, Path, dict[str, Path]]) -> None:
    binary, tmp, _ = chisq_run
    for f in (tmp / "ct").glob("y.*"):
        f.unlink()
    message = compute_error(binary, tmp / "keys", tmp / "ct", tmp / "res")
    assert "missing input 'y'" in message


def encrypt_row_blocks(
    binary: Path, tmp: Path, files: dict[str, Path], blocks: tuple[tuple[int, int], ...]
) -> Path:
    """Each data owner encrypts its own rows a:b of y and S into tmp/parts; returns that dir."""
    y, s = np.load(files["y"]), np.load(files["S"])
    parts = tmp / "parts"
    for a, b in blocks:
        np.save(tmp / f"y{a}.npy", y[a:b])
        np.save(tmp / f"S{a}.npy", s[a:b])
        ok(
            binary,
            "encrypt",
            "--pk",
            str(tmp / "keys" / "public"),
            "--rows",
            f"{a}:{b}",
            "--input",
            f"y={tmp / f'y{a}.npy'}",
            "--input",
            f"S={tmp / f'S{a}.npy'}",
            "--out",
            str(parts),
        )
    return parts


def test_owners_encrypt_their_own_rows(chisq_run: tuple[Path, Path, dict[str, Path]]) -> None:
    binary, tmp, files = chisq_run
    parts = encrypt_row_blocks(binary, tmp, files, ((0, 8), (8, 20)))
    ok(
        binary,
        "compute",
        "--eval",
        str(tmp / "keys" / "eval"),
        "--in",
        str(parts),
        "--out",
        str(tmp / "r1"),
    )
    ok(
        binary,
        "compute",
        "--eval",
        str(tmp / "keys" / "eval"),
        "--in",
        str(tmp / "ct"),
        "--out",
        str(tmp / "r2"),
    )
    for r in ("r1", "r2"):
        ok(
            binary,
            "decrypt",
            "--sk",
            str(tmp / "keys" / "secret"),
            "--in",
            str(tmp / r),
            "--out",
            str(tmp / f"d{r}"),
            "--no-flooding",  # the oracle compares exact values
        )
    a, b = np.load(tmp / "dr1" / "chi2_den.npy"), np.load(tmp / "dr2" / "chi2_den.npy")
    assert rel_error(a, b) < 1e-5
    # A gap in the rows is refused by name.
    for f in parts.glob("*.rows-8-20.*"):
        f.unlink()
    encrypt_row_blocks(binary, tmp, files, ((12, 20),))
    assert "rows 8:12 are missing" in compute_error(binary, tmp / "keys", parts, tmp / "r3")


def test_encrypt_refuses_bad_inputs_and_leaves_nothing(
    chisq_run: tuple[Path, Path, dict[str, Path]],
) -> None:
    binary, tmp, files = chisq_run
    s = np.load(files["S"]).astype(np.float64)
    s[2, 3] = 5
    np.save(tmp / "bad.npy", s)
    out = tmp / "ct2"
    done = role(
        binary,
        "encrypt",
        "--pk",
        str(tmp / "keys" / "public"),
        "--input",
        f"y={files['y']}",
        "--input",
        f"S={tmp / 'bad.npy'}",
        "--out",
        str(out),
    )
    assert done.returncode == 1
    assert "element 23 is 5, outside its declared domain {0, 1, 2}" in done.stderr
    assert not out.exists()
    done = role(
        binary,
        "encrypt",
        "--pk",
        str(tmp / "keys" / "public"),
        "--input",
        f"Q={files['y']}",
        "--out",
        str(out),
    )
    assert done.returncode == 2 and "no input of that name (inputs: y, S)" in done.stderr
    (tmp / "junk.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    done = role(
        binary,
        "encrypt",
        "--pk",
        str(tmp / "keys" / "public"),
        "--input",
        f"y={tmp / 'junk.npy'}",
        "--out",
        str(out),
    )
    assert done.returncode == 1 and "junk.npy: not a valid .npy file" in done.stderr
    assert not out.exists()


def test_progress_and_peak_memory_are_reported(
    chisq_run: tuple[Path, Path, dict[str, Path]],
) -> None:
    binary, tmp, _ = chisq_run
    done = role(
        binary,
        "compute",
        "--eval",
        str(tmp / "keys" / "eval"),
        "--in",
        str(tmp / "ct"),
        "--out",
        str(tmp / "res"),
        quiet=False,
    )
    assert done.returncode == 0, done.stderr
    assert "[compute pass 1/1] 20/20 (100%)" in done.stderr
    assert "peak_rss_bytes=" in done.stderr


def test_info_prints_headers(chisq_run: tuple[Path, Path, dict[str, Path]]) -> None:
    binary, tmp, _ = chisq_run
    out = role(binary, "info", str(tmp / "keys" / "public")).stdout
    assert "kind: public key" in out and "this program: chisq_numerators (same parameters)" in out
    ct = next((tmp / "ct").glob("S.rows-*.cts"))
    out = role(binary, "info", str(ct)).stdout
    assert "kind: ciphertext array" in out and "count: 20" in out
    meta = role(binary, "info", f"{ct}.meta").stdout
    assert "program: chisq" in meta and "checksum: ok" in meta
    done = role(binary, "info", str(tmp / "in" / "y.npy"))
    assert done.returncode == 1 and "bad magic" in done.stderr


def test_insecure_programs_say_so(tmp_path: Path) -> None:
    path, sizes = EXAMPLES[0]
    built = compile_cpp(
        ROOT / path, tmp_path / "b", Options(sizes=Sizes.parse(sizes), log_n=11, insecure=True)
    )
    done = role(built.binary, "keygen", "--out", str(tmp_path / "k"))
    assert done.returncode == 0, done.stderr
    assert "NOT 128-bit secure" in done.stderr


def test_rebuild_only_when_the_program_changes(programs: dict[str, Built]) -> None:
    path, sizes = EXAMPLES[0]
    again = compile_cpp(
        ROOT / path, programs[path].directory, Options(sizes=Sizes.parse(sizes), flooding=False)
    )
    assert again.rewritten == []
    done = subprocess.run(
        ["ninja", "-C", str(again.directory), "-n"], capture_output=True, text=True, check=True
    )
    assert "no work to do" in done.stdout


def test_decrypt_into_one_npz_file(chisq_run: tuple[Path, Path, dict[str, Path]]) -> None:
    binary, tmp, _ = chisq_run
    keys = tmp / "keys"
    ok(
        binary,
        "compute",
        "--eval",
        str(keys / "eval"),
        "--in",
        str(tmp / "ct"),
        "--out",
        str(tmp / "res"),
    )
    ok(
        binary,
        "decrypt",
        "--sk",
        str(keys / "secret"),
        "--in",
        str(tmp / "res"),
        "--out",
        str(tmp / "d"),
        "--no-flooding",  # the oracle compares exact values
    )
    ok(
        binary,
        "decrypt",
        "--sk",
        str(keys / "secret"),
        "--in",
        str(tmp / "res"),
        "--out",
        str(tmp / "r.npz"),
        "--no-flooding",  # the oracle compares exact values
    )
    with np.load(tmp / "r.npz") as archive:
        assert sorted(archive.files) == ["chi2_den", "chi2_num", "or_den", "or_num"]
        for name in archive.files:
            assert np.array_equal(archive[name], np.load(tmp / "d" / f"{name}.npy")), name


def test_keygen_never_overwrites_keys(chisq_run: tuple[Path, Path, dict[str, Path]]) -> None:
    binary, tmp, _ = chisq_run
    before = (tmp / "keys" / "secret").read_bytes()
    done = role(binary, "keygen", "--out", str(tmp / "keys"))
    assert done.returncode == 1 and "keygen never overwrites keys" in done.stderr
    assert (tmp / "keys" / "secret").read_bytes() == before


def test_a_renamed_row_block_is_refused(chisq_run: tuple[Path, Path, dict[str, Path]]) -> None:
    binary, tmp, files = chisq_run
    parts = encrypt_row_blocks(binary, tmp, files, ((0, 10), (10, 20)))
    # Swap the two S blocks by renaming: the metadata still knows which rows they hold.
    first, second = parts / "S.rows-0-10.cts", parts / "S.rows-10-20.cts"
    for suffix in ("", ".meta"):
        Path(f"{first}{suffix}").rename(tmp / f"swap{suffix}")
        Path(f"{second}{suffix}").rename(f"{first}{suffix}")
        (tmp / f"swap{suffix}").rename(f"{second}{suffix}")
    assert "a renamed file?" in compute_error(binary, tmp / "keys", parts, tmp / "res")
