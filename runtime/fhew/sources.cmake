# fhew/: FHEW/TFHE-style boolean gates with AP and GINX bootstrapping (included by
# runtime/CMakeLists.txt).
target_sources(hec_runtime PRIVATE
  fhew/bootstrap.cpp
  fhew/fhew.cpp
  fhew/gate_program.cpp
  fhew/kernels.cpp
  fhew/kernels_avx512.cpp
  fhew/lwe.cpp
  fhew/params.cpp
  fhew/serialize.cpp
)
set_source_files_properties(fhew/kernels_avx512.cpp PROPERTIES COMPILE_OPTIONS
  "${HEC_AVX512_FLAGS};-Wno-maybe-uninitialized")  # GCC 12 false positive in its intrinsics
# The gate-program harness (hec_fhew_gates): key generation, encryption, evaluation of a gate
# program, decryption in one process; targets/fhew's tests and docs/circuits.md's timings.
add_executable(hec_fhew_gates fhew/gate_tool.cpp)
target_link_libraries(hec_fhew_gates PRIVATE hec_runtime)
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/fhew/circuit_test.cpp
    tests/fhew/fhew_test.cpp
    tests/fhew/gate_program_test.cpp
    tests/fhew/linear_gate_test.cpp
    tests/fhew/public_key_test.cpp
    tests/fhew/kernels_test.cpp
    tests/fhew/serialize_test.cpp
  )
endif()
if(HEC_BUILD_BENCHMARKS)
  add_executable(hec_bench_fhew bench/fhew_bench.cpp)
  target_link_libraries(hec_bench_fhew PRIVATE hec_runtime)
endif()
