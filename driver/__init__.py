"""driver: compile and run orchestration (issue 18).

The pass pipeline (`driver.pipeline`), the four-role sequence of a run (`driver.run`), the
labeled-HE driver (`driver.labhe`), the toolchain environment and the roles' process groups
(`driver.environment`, `driver.interrupt`). It sits above compiler/, dsl/, passes/ and
targets/; the applications (gwas/, bench/) and the command line (hec/) sit above it, and it
imports neither.
"""

__version__ = "0.1.0"

# The most bits of precision a revealed value can be promised: beyond what a CKKS slot decodes
# to in double precision. The command line, gwas and the pipeline all check against this one.
MAX_PRECISION_BITS = 50.0
