# math/: modular arithmetic, NTT, RNS, sampling (included by runtime/CMakeLists.txt).
target_sources(hec_runtime PRIVATE
  math/aligned.cpp
  math/cpu_features.cpp
  math/ntt.cpp
  math/ntt_avx512.cpp
  math/pack.cpp
  math/pack_avx512.cpp
  math/parallel.cpp
  math/poly.cpp
  math/poly_avx512.cpp
  math/primes.cpp
  math/rns.cpp
  math/rns_avx512.cpp
  math/sampling.cpp
)
# The IFMA kernels are compiled for AVX-512 and only entered after run-time detection.
set_source_files_properties(math/ntt_avx512.cpp math/poly_avx512.cpp
  PROPERTIES COMPILE_OPTIONS "${HEC_AVX512_FLAGS}")
set_source_files_properties(math/pack_avx512.cpp
  PROPERTIES COMPILE_OPTIONS "${HEC_AVX512_FLAGS};-mavx512vbmi")
# -ffp-contract=off: the exact base conversion's double arithmetic must round like the
# portable code (no fused multiply-add), so both paths give identical results.
set_source_files_properties(math/rns_avx512.cpp PROPERTIES
  COMPILE_OPTIONS "${HEC_AVX512_FLAGS};-ffp-contract=off")
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/math/modarith_test.cpp
    tests/math/cpu_features_test.cpp
    tests/math/primes_test.cpp
    tests/math/ntt_test.cpp
    tests/math/pack_test.cpp
    tests/math/rns_test.cpp
    tests/math/sampling_test.cpp
    tests/math/poly_test.cpp
  )
endif()
if(HEC_BUILD_BENCHMARKS)
  foreach(bench IN ITEMS modarith ntt rns poly)
    add_executable(hec_bench_${bench} bench/${bench}_bench.cpp)
    target_link_libraries(hec_bench_${bench} PRIVATE hec_runtime benchmark::benchmark)
  endforeach()
  # OpenFHE's NTT from the PyPI wheel's shared library, loaded at run time (reference row).
  add_executable(hec_bench_openfhe_ntt bench/openfhe_ntt_bench.cpp)
  target_link_libraries(hec_bench_openfhe_ntt PRIVATE hec_runtime benchmark::benchmark
    ${CMAKE_DL_LIBS})
endif()
