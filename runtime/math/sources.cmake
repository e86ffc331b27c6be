# math/: modular arithmetic, NTT, RNS, sampling (included by runtime/CMakeLists.txt).
target_sources(hec_runtime PRIVATE
  math/cpu_features.cpp
  math/ntt.cpp
  math/ntt_avx512.cpp
  math/parallel.cpp
  math/poly.cpp
  math/primes.cpp
  math/rns.cpp
  math/sampling.cpp
)
# The IFMA kernels are compiled for AVX-512 and only entered after run-time detection.
set_source_files_properties(math/ntt_avx512.cpp PROPERTIES COMPILE_OPTIONS "${HEC_AVX512_FLAGS}")
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/math/modarith_test.cpp
    tests/math/cpu_features_test.cpp
    tests/math/primes_test.cpp
    tests/math/ntt_test.cpp
    tests/math/rns_test.cpp
    tests/math/sampling_test.cpp
    tests/math/poly_test.cpp
  )
endif()
if(HEC_BUILD_BENCHMARKS)
  add_executable(hec_bench_modarith bench/modarith_bench.cpp)
  target_link_libraries(hec_bench_modarith PRIVATE hec_runtime benchmark::benchmark)
endif()
