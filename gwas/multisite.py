"""The multi-site chi-square GWAS as a study runs it: several sites (hospitals, biobanks) each
hold their own genotypes, none sends them to anyone, and the coordinator gets the pooled test.

Parties and steps (docs/multisite.md walks through three sites on one machine):
 (1) coordinator, `hec site setup`: the shared SNP list (a .bim: the study's SNPs and allele
     coding, A1 counted) and each site's row range (its declared largest sample count) fix the
     compiled program (gwas/programs/chisq_alleles.hec, N = the sum of the declared counts,
     M = the shared SNPs); keygen. The study directory's `keys/public` goes to the sites,
     `keys/eval` to the server, `keys/secret` stays with the coordinator.
 (2) each site, `hec site prepare`: reads its files (PLINK 1, PLINK 2, VCF), applies its sample
     filters and --mind locally, aligns its alleles to the shared list (same order; swapped
     order; strand flips, complemented; strand-ambiguous A/T and C/G SNPs kept as written or
     dropped, as the site chooses; any other mismatch, or a shared SNP the site lacks, is an
     error naming the site, file, line and SNP), codes every call as PLINK counts it (haploid X
     in males, Y, MT: gwas/filters.py), pads its rows to its declared count with individuals
     that have no call (they add nothing to any sum), and encrypts its rows (public key only)
     into one upload directory;
 (3) server, `hec site compute`: checks that the uploads cover every site's rows once, and
     runs the program's server role on all of them (evaluation keys only);
 (4) coordinator, `hec site finish`: decrypts the pooled 2 x 2 table of every SNP, chooses A1 as
     the minor allele of the pooled analysed samples (PLINK's rule counts founders; the two agree
     when every analysed sample is a founder with a phenotype, as in the walkthrough), and writes
     the same .assoc, .assoc.adjusted, plots and .log as `hec gwas chisq`.

What leaves a site: ciphertexts, its row count and the alignment summary (how many SNPs were
swapped, flipped or dropped). What the coordinator learns: the pooled allele counts of each
SNP's table (n11, c1, r1, d), as in the one-machine run.

A study set up with `--test logistic` runs `hec gwas logistic` over the sites instead
(gwas/multisite_logistic.py: the covariate fit's rounds, the sites' per-SNP inputs and the
coordinator's finish); the study directory, the alignment and the server's `compute` (which
takes either kind of upload: per-SNP inputs, or one round of the fit) are this module's.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from compiler.errors import InternalError, UserError
from driver.roles import RoleSequence
from gwas import DEFAULT_PRECISION_BITS
from gwas.adjust import adjust, write_adjusted
from gwas.assoc import rows_from_arrays, write_assoc
from gwas.backend import CompiledProgram, EncryptedBackend, compact_integers
from gwas.chisq import (
    PROGRAM_ALLELES,
    ROUNDING_ERROR_LIMIT,
    ChisqOptions,
    _temp_path,
    open_input,
    pheno_spec,
    write_failure_log,
)
from gwas.chromosomes import ploidy
from gwas.exact import TableCounts, assoc_columns, ci_column_names, plink_rules
from gwas.filters import (
    FilterLog,
    Selection,
    allele_coding,
    qc_from_counts,
    qc_inputs,
    quality_control,
    select,
)
from gwas.logistic import PROGRAM_FIT, PROGRAM_LOGISTIC
from gwas.plink import MISSING_INT8, Fileset, Variant, read_bim, sample_phenotypes
from gwas.plots import genomic_inflation, manhattan_plot, qq_plot, top_hits
from gwas.qc import PROGRAM_QC, counts_from_reveals, hwe_sample

Array = npt.NDArray[np.float64]
STUDY_FILE = "study.json"
SITE_FILE = "site.json"
COMPLEMENT = {"A": "T", "T": "A", "C": "G", "G": "C"}
STRAND_CHOICES = ("keep", "drop")
ROUNDS_DIR = "rounds"  # logistic: the covariate fit's published rounds (round-T.json)
TESTS = ("chisq", "logistic")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def key_digest(keys: Path) -> str:
    """SHA-256 of a key directory's public key (`public`: a file or a directory of files)."""
    public = keys / "public"
    if public.is_file():
        return _sha256(public)
    h = hashlib.sha256()
    for f in sorted(public.rglob("*")):
        if f.is_file():
            h.update(f.relative_to(public).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def write_json(path: Path, value: Any) -> None:
    """Written under a temporary name, then renamed: never half a file under the real name."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1) + "\n")
    tmp.replace(path)


@dataclass
class Study:
    directory: Path
    shared: list[Variant]
    sites: dict[str, tuple[int, int]]  # site -> rows [begin, end)
    precision_bits: float
    shared_sha256: str
    qc: bool = False  # sites also upload the inputs of gwas/programs/qc.hec
    test: str = "chisq"  # or "logistic" (gwas/multisite_logistic.py)
    covariates: list[str] = field(default_factory=list)  # logistic: the covariates' names
    covar_ranges: list[tuple[float, float]] = field(default_factory=list)  # ... declared ranges
    keys_sha256: dict[str, str] = field(default_factory=dict)  # key directory -> public key

    @property
    def n_rows(self) -> int:
        return max(end for _, end in self.sites.values())

    @property
    def k(self) -> int:
        """Coefficients of the covariate model: the covariates and the intercept."""
        return len(self.covariates) + 1

    @property
    def sizes(self) -> dict[str, int]:
        return {"N": self.n_rows, "M": len(self.shared)}

    def sizes_for(self, program: Path) -> dict[str, int]:
        """The size binding of one of the study's programs (the logistic ones also take K)."""
        if program == PROGRAM_FIT:
            return {"N": self.n_rows, "K": self.k}
        if program == PROGRAM_LOGISTIC:
            return {**self.sizes, "K": self.k}
        return self.sizes

    def programs(self) -> list[tuple[Path, str]]:
        """The study's programs and the directory of each one's keys."""
        if self.test == "logistic":
            return [(PROGRAM_LOGISTIC, "keys"), (PROGRAM_FIT, "fit-keys"), (PROGRAM_QC, "qc-keys")]
        return [(PROGRAM_ALLELES, "keys"), *([(PROGRAM_QC, "qc-keys")] if self.qc else [])]

    def rounds(self) -> list[dict[str, Any]]:
        """The covariate fit's published rounds (logistic), in order: round T's theta, and
        whether it is the converged fit (`final`)."""
        found = sorted(
            (int(f.stem.removeprefix("round-")), f)
            for f in (self.directory / ROUNDS_DIR).glob("round-*.json")
        )
        return [json.loads(f.read_text()) for _, f in found]


def load_study(directory: Path) -> Study:
    meta_path = directory / STUDY_FILE
    if not meta_path.is_file():
        raise UserError(
            f"{directory}: not a study directory (no {STUDY_FILE})",
            hint="the coordinator creates it with `hec site setup`",
        )
    meta = json.loads(meta_path.read_text())
    shared_path = directory / "shared.bim"
    if _sha256(shared_path) != meta["shared_sha256"]:
        raise UserError(f"{shared_path}: changed since `hec site setup` (checksum differs)")
    return Study(
        directory,
        read_bim(shared_path),
        {k: (int(v[0]), int(v[1])) for k, v in meta["sites"].items()},
        float(meta["precision_bits"]),
        meta["shared_sha256"],
        bool(meta.get("qc", False)),
        meta.get("test", "chisq"),
        list(meta.get("covariates", [])),
        [(float(a), float(b)) for a, b in meta.get("covar_ranges", [])],
        dict(meta.get("keys_sha256", {})),
    )


def _roles(backend: EncryptedBackend, study_dir: Path, keys: str = "keys") -> RoleSequence:
    """The roles of a study's program: its keys in `study_dir/keys` (the QC program's in
    `qc-keys`); unsigned: the sites of a study hold no signing keys."""
    if backend.binary is None:
        raise InternalError("the generated program was not built")
    return RoleSequence(backend.binary, study_dir, signed=False, keys=study_dir / keys)


def _backend(study: Study, program: Path) -> EncryptedBackend:
    backend = EncryptedBackend()
    # A logistic study publishes what it computes from the fit's and the per-SNP sums (theta,
    # the statistics): they are decrypted with noise flooding, and compiled for it. Counts,
    # which leave rounded to integers, are not (docs/security.md, "noise flooding").
    backend.flooding = program in (PROGRAM_FIT, PROGRAM_LOGISTIC)
    return backend


def _compile(
    study: Study, cache_dir: Path | None, program: Path = PROGRAM_ALLELES
) -> EncryptedBackend:
    backend = _backend(study, program)
    backend.compile(program, study.sizes_for(program), study.precision_bits, cache_dir)
    return backend


def compiled(study: Study, cache_dir: Path | None, program: Path) -> CompiledProgram:
    """The study's compiled program (its report: the promised errors of the revealed values)."""
    return _backend(study, program).compile(
        program, study.sizes_for(program), study.precision_bits, cache_dir
    )


def check_keys(study: Study, site: str, keys: str) -> str:
    """The digest of the public key a site encrypts with; an error when it is not the key
    `hec site setup` made (the site holds another study's keys, or old ones)."""
    got = key_digest(study.directory / keys)
    want = study.keys_sha256.get(keys)
    if want is not None and got != want:
        raise UserError(
            f"site {site}: {study.directory / keys / 'public'} is not the public key of this "
            f"study (sha256 {got[:12]}..., `hec site setup` made {want[:12]}...)",
            hint="copy the study's keys again from the coordinator",
        )
    return got


def setup(
    directory: Path,
    shared: Path,
    sites: list[str],
    precision_bits: float = DEFAULT_PRECISION_BITS,
    cache_dir: Path | None = None,
    qc: bool = False,
    test: str = "chisq",
    covariates: Sequence[str] = (),
    covar_ranges: Sequence[tuple[float, float]] = (),
) -> Study:
    """Step (1). `sites`: NAME=ROWS, the largest number of samples each site holds (after its
    sample filters). `qc`: the sites also upload the counts --geno, --hwe, --maf need
    (gwas/programs/qc.hec, its own keys in `qc-keys`), and A1 follows PLINK's founders rule.
    `test` logistic: the covariates' names and declared ranges (checked by the caller,
    gwas/multisite_logistic.py), three programs' keys (`keys`: logistic.hec, `fit-keys`:
    logistic_fit.hec, `qc-keys`: qc.hec, always: A1 follows PLINK's founders rule)."""
    if test not in TESTS:
        raise UserError(f"--test {test}: choose {' or '.join(TESTS)}")
    variants = read_bim(shared)
    names = [v.snp for v in variants]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise UserError(f"{shared}: SNP {dup} appears twice in the shared list")
    ranges: dict[str, tuple[int, int]] = {}
    start = 0
    for item in sites:
        name, sep, rows = item.partition("=")
        if not sep or not name or not rows.isdigit() or int(rows) < 1:
            raise UserError(f"--site {item!r}: expected NAME=ROWS (e.g. A=1200)")
        if name in ranges:
            raise UserError(f"--site {name} is given twice")
        ranges[name] = (start, start + int(rows))
        start += int(rows)
    if len(ranges) < 1:
        raise UserError("give every site with --site NAME=ROWS")
    if directory.exists() and any(directory.iterdir()):
        raise UserError(f"{directory}: exists and is not empty (a study directory is made once)")
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(shared, directory / "shared.bim")
    program = PROGRAM_LOGISTIC if test == "logistic" else PROGRAM_ALLELES
    meta: dict[str, Any] = {
        "test": test,
        "program": program.name,
        "program_sha256": _sha256(program),
        "precision_bits": precision_bits,
        "sites": {k: list(v) for k, v in ranges.items()},
        "shared_sha256": _sha256(directory / "shared.bim"),
        "qc": qc or test == "logistic",
    }
    if test == "logistic":
        meta["covariates"] = list(covariates)
        meta["covar_ranges"] = [list(r) for r in covar_ranges]
    write_json(directory / STUDY_FILE, meta)
    study = load_study(directory)
    for prog, keys in study.programs():
        _roles(_compile(study, cache_dir, prog), directory, keys).keygen()
    meta["keys_sha256"] = {keys: key_digest(directory / keys) for _, keys in study.programs()}
    write_json(directory / STUDY_FILE, meta)
    return load_study(directory)


@dataclass
class Alignment:
    """How a site's variants map onto the shared list."""

    columns: npt.NDArray[np.intp]  # the site's variant for each shared SNP
    swap: npt.NDArray[np.bool_]  # the site counts the shared A2
    drop: npt.NDArray[np.bool_]  # left out at this site (its calls count as missing)
    counts: dict[str, int] = field(default_factory=dict)


def _ambiguous(a: str, b: str) -> bool:
    return COMPLEMENT.get(a.upper()) == b.upper()


def align(site: str, fileset: Fileset, shared: list[Variant], strand_ambiguous: str) -> Alignment:
    """Match every shared SNP to the site's variant of the same ID, and its alleles."""
    if strand_ambiguous not in STRAND_CHOICES:
        raise UserError(f"--strand-ambiguous {strand_ambiguous}: choose keep or drop")
    index = {v.snp: j for j, v in enumerate(fileset.variants)}
    m = len(shared)
    columns = np.zeros(m, dtype=np.intp)
    swap = np.zeros(m, dtype=bool)
    drop = np.zeros(m, dtype=bool)
    counts = {"same": 0, "swapped": 0, "flipped": 0, "flipped+swapped": 0, "ambiguous": 0,
              "ambiguous dropped": 0}  # fmt: skip
    absent = [s.snp for s in shared if s.snp not in index]
    if absent:
        more = f" and {len(absent) - 5} more" if len(absent) > 5 else ""
        raise UserError(
            f"site {site}: {len(absent)} SNP(s) of the shared list are not in {fileset.bim}: "
            f"{', '.join(absent[:5])}{more}",
            hint="every site holds every shared SNP (a site's missing calls are fine); the "
            "coordinator drops SNPs some site lacks from the shared list before `hec site setup`",
        )
    for k, s in enumerate(shared):
        j = index[s.snp]
        v = fileset.variants[j]
        columns[k] = j
        where = f"{fileset.bim}:{v.line}" if v.line else str(fileset.bim)
        if v.chrom != s.chrom or v.bp != s.bp:
            raise UserError(
                f"site {site}: SNP {s.snp} is at {v.chrom}:{v.bp} in {where}, the shared list "
                f"has {s.chrom}:{s.bp}",
                hint="sites and the shared list must use the same genome build",
            )
        a1, a2 = v.a1.upper(), v.a2.upper()
        A1, A2 = s.a1.upper(), s.a2.upper()
        if _ambiguous(A1, A2):
            if strand_ambiguous == "drop":
                drop[k] = True
                counts["ambiguous dropped"] += 1
                continue
            counts["ambiguous"] += 1
        c1, c2 = COMPLEMENT.get(a1, "?"), COMPLEMENT.get(a2, "?")
        if (a1, a2) == (A1, A2) or (a2 == "0" and a1 == A1):
            counts["same"] += 1
        elif (a1, a2) == (A2, A1) or (a2 == "0" and a1 == A2):
            swap[k] = True
            counts["swapped"] += 1
        elif not _ambiguous(A1, A2) and ((c1, c2) == (A1, A2) or (a2 == "0" and c1 == A1)):
            counts["flipped"] += 1
        elif not _ambiguous(A1, A2) and ((c1, c2) == (A2, A1) or (a2 == "0" and c1 == A2)):
            swap[k] = True
            counts["flipped+swapped"] += 1
        else:
            raise UserError(
                f"site {site}: SNP {s.snp}: alleles {v.a1}/{v.a2} in {where} do not match the "
                f"shared list's {s.a1}/{s.a2}, in either order or strand",
                hint="check the site's genome build and allele coding; or remove the SNP from "
                "the shared list",
            )
    return Alignment(columns, swap, drop, counts)


def check_site(study: Study, site: str, out: Path) -> None:
    if site not in study.sites:
        raise UserError(
            f"site {site} is not in the study {study.directory} (sites: {', '.join(study.sites)})"
        )
    if out.exists():
        raise UserError(f"{out}: exists (an upload directory is written once)")


@dataclass
class SiteSamples:
    opened: Fileset  # the site's files as read (a covariate file is matched against these)
    fileset: Fileset  # after the site's sample filters and --mind
    pheno: npt.NDArray[np.float64]  # the phenotype of fileset's samples (NaN: none)
    log: FilterLog


def site_samples(study: Study, site: str, opts: ChisqOptions, finish_hint: str) -> SiteSamples:
    """A site's samples as every study test reads them: its files and phenotype, its sample
    filters and --mind (the SNP filters need the pooled counts: refused, `finish_hint` says
    where they go), and no more samples than the study's rows for the site."""
    opened = open_input(opts)
    log = FilterLog()
    y_file = sample_phenotypes(opened, pheno_spec(opts), binary=True)
    fileset = select(opened, opts.selection, log)
    assert fileset.sample_rows is not None
    y_all = y_file[fileset.sample_rows]
    if opts.selection.geno is not None or opts.selection.maf is not None or opts.selection.hwe:
        raise UserError(
            f"site {site}: --geno, --maf and --hwe need the pooled counts; a site applies "
            "--mind and the sample filters only",
            hint=finish_hint,
        )
    qc = quality_control(fileset, y_all, True, opts.selection, log)
    begin, end = study.sites[site]
    if qc.fileset.n_samples > end - begin:
        raise UserError(
            f"site {site}: {qc.fileset.n_samples} samples, more than the {end - begin} rows the "
            "study set up for this site",
            hint="the coordinator sets each site's rows with `hec site setup --site NAME=ROWS`",
        )
    assert qc.fileset.sample_rows is not None
    return SiteSamples(opened, qc.fileset, qc.pheno, log)


def prepare(
    study_dir: Path,
    site: str,
    opts: ChisqOptions,
    out: Path,
    strand_ambiguous: str = "keep",
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """Step (2): one site's upload directory (ciphertexts of its rows and site.json)."""
    study = load_study(study_dir)
    check_site(study, site, out)
    if study.test != "chisq":
        raise InternalError("a logistic study's sites prepare with gwas/multisite_logistic.py")
    begin, end = study.sites[site]
    samples = site_samples(
        study,
        site,
        opts,
        "the coordinator gives them to `hec site finish` (study set up with --qc)",
    )
    fileset, y_all, log = samples.fileset, samples.pheno, samples.log
    alignment = align(site, fileset, study.shared, strand_ambiguous)
    included = ~np.isnan(y_all)
    n_all = fileset.n_samples
    n = int(included.sum())
    male = np.array([s.is_male for s in fileset.samples])
    ploidies = [ploidy(s.chrom) for s in study.shared]
    g = aligned_calls(fileset, alignment)
    a1, alleles = allele_coding(g, ploidies, male)
    # Samples without a phenotype enter the QC counts only: no allele in the test's table.
    a1[~included] = 0.0
    alleles[~included] = 0.0
    inputs = {"y": np.where(included, y_all, 0.0), "S": a1, "A": alleles}
    encrypt = [(PROGRAM_ALLELES, "keys", "ciphertexts", inputs)]
    if study.qc:
        founders = np.array([s.is_founder for s in fileset.samples])
        qc_in = qc_inputs(g, ploidies, male, founders, hwe_sample(fileset, y_all, True))
        encrypt.append((PROGRAM_QC, "qc-keys", "qc-ciphertexts", qc_in))
    summary = {
        "kind": "snps",
        "samples": n_all,
        "samples_analysed": n,
        "padding_rows": end - begin - n_all,
        "alignment": alignment.counts,
        "filters": log.lines,
        "input": f"{fileset.kind} {fileset.prefix}",
    }
    return write_upload(study, site, out, summary, encrypt, cache_dir)


def aligned_calls(fileset: Fileset, alignment: Alignment) -> npt.NDArray[np.int8]:
    """The site's calls of the shared SNPs in the shared coding (samples x shared SNPs): a
    swapped SNP counts the other allele, a dropped one is missing."""
    raw = fileset.read_block(0, fileset.n_variants)[:, alignment.columns]
    g = np.where(alignment.swap & (raw != MISSING_INT8), 2 - raw, raw).astype(np.int8)
    g[:, alignment.drop] = MISSING_INT8
    return g


def write_upload(
    study: Study,
    site: str,
    out: Path,
    summary: dict[str, Any],
    encrypt: list[tuple[Path, str, str, dict[str, Array]]],
    cache_dir: Path | None,
) -> dict[str, Any]:
    """A site's upload directory: for each (program, key directory, ciphertext directory,
    inputs), the inputs (the site's samples first, zero rows up to its row count: they add
    nothing to any sum) encrypted with the key directory's public key for the site's rows;
    then site.json (`summary`, the site, its rows, the shared list's and the keys' digests).
    Written in a temporary directory next to `out`, renamed to `out` when complete."""
    begin, end = study.sites[site]
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        plain = tmp / "plain"
        plain.mkdir()
        digests = {}
        for program, keys, ct_name, inputs in encrypt:
            digests[keys] = check_keys(study, site, keys)
            files: dict[str, Path] = {}
            for name, value in inputs.items():
                full = np.zeros((end - begin, *value.shape[1:]))
                full[: len(value)] = value
                files[name] = plain / f"{ct_name}-{name}.npy"
                np.save(files[name], compact_integers(full))
            roles = _roles(_compile(study, cache_dir, program), study.directory, keys)
            roles.encrypt(files, tmp / ct_name, rows=(begin, end))
        shutil.rmtree(plain)
        made = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        summary = {"site": site, **summary, "keys_sha256": digests, "rows": [begin, end],
                   "shared_sha256": study.shared_sha256, "made": made}  # fmt: skip
        (tmp / SITE_FILE).write_text(json.dumps(summary, indent=1) + "\n")
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return summary


def read_uploads(study: Study, uploads: list[Path]) -> dict[str, dict[str, Any]]:
    """Every site's upload exactly once, for this study's SNP list, rows and keys, all of one
    kind (the per-SNP inputs, or one round of the covariate fit: the same round)."""
    seen: dict[str, Path] = {}
    metas: dict[str, dict[str, Any]] = {}
    for up in uploads:
        meta_path = up / SITE_FILE
        if not meta_path.is_file():
            raise UserError(f"{up}: not a site upload (no {SITE_FILE})")
        meta = json.loads(meta_path.read_text())
        site = meta["site"]
        if site in seen:
            raise UserError(f"site {site}: two uploads ({seen[site]} and {up})")
        if meta["shared_sha256"] != study.shared_sha256:
            raise UserError(f"site {site}: {up} was prepared for another shared SNP list")
        if tuple(meta["rows"]) != study.sites.get(site):
            raise UserError(f"site {site}: {up} holds rows {meta['rows']}, the study has "
                            f"{study.sites.get(site)}")  # fmt: skip
        for keys, digest in meta.get("keys_sha256", {}).items():
            want = study.keys_sha256.get(keys)
            if want is not None and digest != want:
                raise UserError(
                    f"site {site}: {up} was encrypted with another public key than this "
                    f"study's {keys} (sha256 {digest[:12]}..., the study's {want[:12]}...)",
                    hint="the site copies the study's keys again and encrypts again",
                )
        meta["upload"] = str(up)
        meta.setdefault("kind", "snps")
        seen[site] = up
        metas[site] = meta
    missing = [s for s in study.sites if s not in seen]
    if missing:
        raise UserError(
            f"no upload from site(s) {', '.join(missing)}; the pooled test needs every site"
        )
    first = next(iter(metas.values()))
    for site, meta in metas.items():
        if (meta["kind"], meta.get("round")) != (first["kind"], first.get("round")):
            raise UserError(
                f"site {site}: {meta['upload']} is {_kind(meta)}, site {first['site']}'s "
                f"{first['upload']} is {_kind(first)}; one computation takes one kind"
            )
    return metas


def _kind(meta: dict[str, Any]) -> str:
    if meta["kind"] == "fit":
        return f"the covariate fit's round {meta['round']}"
    return "the per-SNP inputs" + (f" at round {meta['round']}" if "round" in meta else "")


def compute(study_dir: Path, uploads: list[Path], out: Path, cache_dir: Path | None) -> None:
    """Step (3): the server role on every site's upload (a logistic study: also on every
    site's upload of one round of the covariate fit, gwas/multisite_logistic.py)."""
    study = load_study(study_dir)
    metas = read_uploads(study, uploads)
    kind = next(iter(metas.values()))["kind"]
    if study.test == "chisq" and kind != "snps":
        raise UserError(f"{study_dir}: a chi-square study has no covariate fit")
    if study.test == "logistic":
        rounds = study.rounds()
        current = rounds[-1]
        for site, meta in metas.items():
            if meta.get("round") != current["round"]:
                raise UserError(
                    f"site {site}: {meta['upload']} was made at round {meta.get('round')}'s "
                    f"theta, the study's current round is {current['round']}",
                    hint="the site runs `hec site "
                    + ("prepare" if current["final"] else "fit")
                    + "` again with the current round",
                )
        if kind == "fit" and current["final"]:
            raise UserError(f"the covariate fit converged at round {current['round']}: "
                            "the sites now run `hec site prepare`")  # fmt: skip
        if kind == "snps" and not current["final"]:
            raise UserError(f"site {next(iter(metas))}: per-SNP inputs before the covariate "
                            "fit converged")  # fmt: skip
    if out.exists():
        raise UserError(f"{out}: exists")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: directory {out.parent} does not exist")
    if kind == "fit":
        runs = [(PROGRAM_FIT, "ciphertexts", "fit-keys", out)]
    else:
        runs = [(study.programs()[0][0], "ciphertexts", "keys", out)]
        if study.qc:
            runs.append((PROGRAM_QC, "qc-ciphertexts", "qc-keys", out / "qc"))
    tmp_out = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for program, ct_name, keys, target in runs:
            backend = _compile(study, cache_dir, program)
            target = tmp_out / target.relative_to(out)
            with tempfile.TemporaryDirectory(prefix="hec-site-") as tmp:
                pooled = Path(tmp) / "in"
                pooled.mkdir()
                for up in uploads:
                    if not (up / ct_name).is_dir():
                        raise UserError(f"{up}: no {ct_name} (the study asks for QC counts)")
                    for f in (up / ct_name).iterdir():
                        (pooled / f.name).symlink_to(f.resolve())
                _roles(backend, study_dir, keys).compute(pooled, target)
        (tmp_out / "sites.json").write_text(
            json.dumps({s: m["upload"] for s, m in metas.items()}) + "\n"
        )
        (tmp_out / "uploads.json").write_text(json.dumps(metas, indent=1) + "\n")
        tmp_out.rename(out)
    except BaseException:
        shutil.rmtree(tmp_out, ignore_errors=True)
        raise


def finish(
    study_dir: Path,
    results: Path,
    out: Path,
    adjust_file: bool = False,
    ci: float | None = None,
    counts_mode: bool = False,
    plots: bool = True,
    cache_dir: Path | None = None,
    qc: Selection | None = None,
) -> tuple[Array, Array, Array]:
    """Step (4): decrypt the pooled tables and write the outputs of `hec gwas chisq`; `qc`:
    the --geno, --hwe and --maf thresholds (the study must have been set up with QC)."""
    started = datetime.datetime.now(datetime.UTC)
    done: list[str] = []
    log_path = out.with_name(out.name + ".log")
    try:
        return _finish(study_dir, results, out, adjust_file, ci, counts_mode, plots, cache_dir,
                       done, started, qc or Selection())  # fmt: skip
    except (Exception, KeyboardInterrupt) as err:
        write_failure_log(log_path, "site finish", "", started, done, err)
        raise


def _finish(
    study_dir: Path, results: Path, out: Path, adjust_file: bool, ci: float | None,
    counts_mode: bool, plots: bool, cache_dir: Path | None, done: list[str],
    started: datetime.datetime, qc: Selection,
) -> tuple[Array, Array, Array]:  # fmt: skip
    study = load_study(study_dir)
    if study.test != "chisq":
        raise InternalError("a logistic study finishes with gwas/multisite_logistic.py")
    wants_qc = qc.geno is not None or qc.maf is not None or qc.hwe is not None
    if wants_qc and not study.qc:
        raise UserError(
            f"--geno/--hwe/--maf need the QC counts: set the study up with `hec site setup --qc` "
            f"({study_dir} was set up without)"
        )
    backend = _compile(study, cache_dir)
    compiled = EncryptedBackend().compile(PROGRAM_ALLELES, study.sizes, study.precision_bits,
                                          cache_dir)  # fmt: skip
    # Unflooded (decrypt --no-flooding): only the counts rounded to integers below leave the
    # coordinator, and a correct rounding (the promised error is checked to allow it) does not
    # depend on the encryption errors, so it reveals nothing a key-recovery attack could use;
    # the unrounded values are deleted with `tmp` (docs/security.md, "Noise flooding").
    with tempfile.TemporaryDirectory(prefix="hec-finish-") as tmp:
        decrypted = _roles(backend, study_dir).decrypt(results, Path(tmp) / "dec", flooding=False)
        revealed = {k: v.astype(np.float64) for k, v in decrypted.items()}
    done.append(f"decrypted {', '.join(sorted(revealed))} from {results}")
    exact = set(compiled.report.get("exact_outputs", []))
    for name in compiled.manifest.outputs:
        if name not in exact and compiled.revealed_abs_error(name) >= ROUNDING_ERROR_LIMIT:
            raise UserError(f"revealed count {name}: promised error too large to round")
        revealed[name] = np.rint(revealed[name]) + 0.0
    t0 = TableCounts(revealed["n11"], revealed["c1"], revealed["r1"], revealed["d"])
    log = FilterLog()
    keep = np.ones(len(study.shared), dtype=bool)
    if study.qc:
        qc_compiled = EncryptedBackend().compile(PROGRAM_QC, study.sizes, study.precision_bits,
                                                 cache_dir)  # fmt: skip
        qc_backend = _compile(study, cache_dir, PROGRAM_QC)
        with tempfile.TemporaryDirectory(prefix="hec-finish-") as tmp:
            qc_decrypted = _roles(qc_backend, study_dir, "qc-keys").decrypt(
                results / "qc", Path(tmp) / "dec", flooding=False
            )  # rounded to counts before use, as above
            qc_revealed = {k: v.astype(np.float64) for k, v in qc_decrypted.items()}
        qcc = counts_from_reveals(qc_compiled, qc_revealed)
        # A1: the minor allele of the pooled founders' calls (PLINK's rule; ties keep the order).
        swap = qcc.maf_a1 > qcc.maf_n - qcc.maf_a1
        a1_rule = "the minor allele of the pooled founders' calls (PLINK's rule, QC counts)"
        if wants_qc:
            keep = qc_from_counts(qcc, [v.snp for v in study.shared], qc, log)
    else:
        # A1: the pooled minor allele of the analysed samples (ties keep the list's order).
        swap = t0.c1 > t0.d - t0.c1
        a1_rule = "the pooled minor allele of the analysed samples"
    t = TableCounts(
        np.where(swap, t0.r1 - t0.n11, t0.n11), np.where(swap, t0.d - t0.c1, t0.c1), t0.r1, t0.d
    )
    client = compiled.client(study.sizes, {"n11": t.n11, "c1": t.c1, "r1": t.r1, "d": t.d})
    or_den_zero = (t.c1 - t.n11) * (t.r1 - t.n11) == 0
    chisq, p, odds = plink_rules(t, client["chi2"], client["p"], client["odds"], or_den_zero)
    columns = assoc_columns(t, odds, ci)
    kept = np.flatnonzero(keep)
    shared = [study.shared[int(j)] for j in kept]
    swap, chisq, p, odds = swap[kept], chisq[kept], p[kept], odds[kept]
    columns = {k: v[kept] for k, v in columns.items()}
    rows = rows_from_arrays(
        [(v.chrom, v.snp, v.bp, v.a2 if s else v.a1, v.a1 if s else v.a2)
         for v, s in zip(shared, swap, strict=True)],
        columns["F_A"], columns["F_U"], chisq, p, odds,
    )  # fmt: skip
    ci_names = ci_column_names(ci) if ci is not None else ()
    for j, row in enumerate(rows):
        row.extra = {"C_A": float(columns["C_A"][j]), "C_U": float(columns["C_U"][j])}
        for name in ci_names:
            row.extra[name] = None if columns["_ci_na"][j] else float(columns[name][j])
    finals = {"assoc": out.with_name(out.name + ".assoc")}
    if adjust_file:
        finals["adjusted"] = out.with_name(out.name + ".assoc.adjusted")
    finals["manhattan"] = out.with_name(out.name + ".manhattan.png")
    finals["qq"] = out.with_name(out.name + ".qq.png")
    finals["log"] = out.with_name(out.name + ".log")
    temps = {k: _temp_path(v) for k, v in finals.items()}
    sites = (
        json.loads((results / "sites.json").read_text())
        if (results / "sites.json").is_file()
        else {}
    )
    lam = genomic_inflation(chisq)
    try:
        write_assoc(temps["assoc"], rows, counts=counts_mode, ci_columns=ci_names)
        adjusted = adjust(chisq, p) if adjust_file else None
        if adjusted is not None:
            write_adjusted(temps["adjusted"], [v.chrom for v in shared], [v.snp for v in shared],
                           adjusted)  # fmt: skip
        n_total = int(np.max(t.d, initial=0) // 2)
        if plots:
            title = (
                f"{out.name}: allelic chi-square (PLINK --assoc), encrypted, "
                f"{len(study.sites)} sites; N ≤ {study.n_rows}, M = {len(shared)} SNPs, "
                f"λ = {lam:.3f}"
            )
            snps = [v.snp for v in shared]
            bps = [int(v.bp) for v in shared]
            manhattan_plot(temps["manhattan"], [v.chrom for v in shared], bps, p, title, names=snps)
            qq_plot(temps["qq"], chisq, p, title)
        params = compiled.report["params"]
        site_rows = ", ".join(f"{k} rows {a}:{b}" for k, (a, b) in study.sites.items())
        hits = ", ".join(f"{n} (P {pv:.3g})" for n, pv in top_hits(p, [v.snp for v in shared]))
        lines = [
            f"hec site finish: pooled allelic chi-square over {len(study.sites)} sites",
            f"started: {started.isoformat(timespec='seconds')}",
            f"study {study_dir}: sites {site_rows}",
            *(f"  upload of site {k}: {v}" for k, v in sites.items()),
            f"program {PROGRAM_ALLELES.name}, N = {study.n_rows} rows (padding rows have no call), "
            f"M = {len(shared)}; ring 2^{params['log_n']}, {params['security_bits']}-bit security",
            "revealed to the coordinator: the pooled n11, c1, r1, d of every SNP (no site's own "
            "counts)",
            f"A1 = {a1_rule}: {int(swap.sum())} SNPs have A1 = the shared list's A2",
            *(f"  {line}" for line in log.lines),
            *(f"  removed by {k}: {', '.join(v[:10])}" for k, v in log.removed_snps.items() if v),
            f"up to {n_total} samples called per SNP",
            f"genomic inflation lambda: {lam:.6f}",
            *([f"--adjust: lambda {adjusted.lam:g}"] if adjusted is not None else []),
            f"top hits: {hits}",
            "written:",
            *(f"  {path}" for k, path in finals.items() if plots or k not in ("manhattan", "qq")),
        ]  # fmt: skip
        temps["log"].write_text("\n".join(lines) + "\n")
        for k in finals:
            if temps[k].exists():
                temps[k].replace(finals[k])
    except BaseException:
        for tmp_file in temps.values():
            tmp_file.unlink(missing_ok=True)
        raise
    return chisq, p, odds


__all__ = ["Selection", "align", "compute", "finish", "prepare", "setup"]
