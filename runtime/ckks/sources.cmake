# ckks/: RNS-CKKS (included by runtime/CMakeLists.txt).
target_sources(hec_runtime PRIVATE
  ckks/params.cpp
  ckks/context.cpp
  ckks/encoder.cpp
  ckks/keys.cpp
  ckks/keyswitch.cpp
  ckks/encryptor.cpp
  ckks/flooding.cpp
  ckks/evaluator.cpp
  ckks/kernels.cpp
  ckks/io.cpp
)
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/ckks/params_test.cpp
    tests/ckks/encoder_test.cpp
    tests/ckks/flooding_test.cpp
    tests/ckks/evaluator_test.cpp
    tests/ckks/kernels_test.cpp
    tests/ckks/io_test.cpp
    tests/ckks/slow_test.cpp
  )
  # The security-table test reads compiler/analysis/security.py from the source tree.
  set_property(SOURCE tests/ckks/params_test.cpp APPEND PROPERTY COMPILE_DEFINITIONS
    HEC_REPO_ROOT="${CMAKE_CURRENT_SOURCE_DIR}/..")
endif()
if(HEC_BUILD_BENCHMARKS)
  add_executable(hec_bench_ckks bench/ckks_bench.cpp bench/memory_floor.cpp)
  target_link_libraries(hec_bench_ckks PRIVATE hec_runtime)
endif()
