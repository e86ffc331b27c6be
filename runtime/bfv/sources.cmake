# bfv/: BFV in the Halevi-Polyakov-Shoup RNS variant (included by runtime/CMakeLists.txt).
target_sources(hec_runtime PRIVATE
  bfv/context.cpp
  bfv/encoder.cpp
  bfv/hps_avx512.cpp
  bfv/keyswitch.cpp
  bfv/multiply.cpp
  bfv/noise.cpp
  bfv/scheme.cpp
  bfv/serialize.cpp
)
# -ffp-contract=off: the kernel's double sums must round like the portable loop's.
set_source_files_properties(bfv/hps_avx512.cpp PROPERTIES
  COMPILE_OPTIONS "${HEC_AVX512_FLAGS};-ffp-contract=off")
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/bfv/bfv_test.cpp
    tests/bfv/serialize_test.cpp
    tests/bfv/hps_test.cpp
    tests/bfv/modswitch_test.cpp
  )
endif()
if(HEC_BUILD_BENCHMARKS)
  add_executable(hec_bench_bfv bench/bfv_bench.cpp bench/memory_floor.cpp)
  target_link_libraries(hec_bench_bfv PRIVATE hec_runtime)
endif()
