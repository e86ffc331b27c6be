# core/: hybrid key switching shared by CKKS and BFV, and the serialization container with its
# BLAKE3 digest (included by runtime/CMakeLists.txt).
target_sources(hec_runtime PRIVATE
  core/blake3.cpp
  core/blake3_avx512.cpp
  core/keyswitch.cpp
  core/serialize.cpp
)
# The 16-lane BLAKE3 kernels are compiled for AVX-512 and only entered after run-time detection.
# -Wno-uninitialized: a GCC 12 false positive in its intrinsics (_mm512_ror_epi32 passes
# _mm512_undefined_epi32() as the unused merge source).
set_source_files_properties(core/blake3_avx512.cpp PROPERTIES COMPILE_OPTIONS
  "${HEC_AVX512_FLAGS};-Wno-uninitialized")
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/core/blake3_test.cpp
    tests/core/keyswitch_test.cpp
    tests/core/serialize_test.cpp
    tests/core/wipe_test.cpp
  )
endif()
if(HEC_BUILD_BENCHMARKS)
  add_executable(hec_bench_digest bench/digest_bench.cpp)
  target_link_libraries(hec_bench_digest PRIVATE hec_runtime benchmark::benchmark)
endif()
