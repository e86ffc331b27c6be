# math/: modular arithmetic, NTT, RNS, sampling (included by runtime/CMakeLists.txt).
target_sources(hec_runtime PRIVATE
  math/cpu_features.cpp
)
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/math/modarith_test.cpp
    tests/math/cpu_features_test.cpp
  )
endif()
if(HEC_BUILD_BENCHMARKS)
  add_executable(hec_bench_modarith bench/modarith_bench.cpp)
  target_link_libraries(hec_bench_modarith PRIVATE hec_runtime benchmark::benchmark)
endif()
