"""The FHEW target: gate programs for the runtime's FHEW layer (runtime/fhew/gate_program.h)
from a compiler/circuits cover."""
