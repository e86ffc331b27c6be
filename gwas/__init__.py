"""Genome-wide association studies with hec programs: PLINK files in, PLINK files out.

Sits above targets/ and the pipeline driver (driver/pipeline.py) and below the command line
(hec/cli.py): `hec gwas chisq` and `hec demo` are thin wrappers over `gwas.chisq.run_chisq`
and `gwas.demo.run_demo`.
"""

# Light constants the command line needs before anything heavy is imported.
BACKEND_NAMES = ("encrypted", "sim")  # gwas.backend.BACKENDS has one entry per name
DEFAULT_BACKEND = "encrypted"
DEFAULT_PRECISION_BITS = 40.0
