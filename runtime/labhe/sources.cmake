# labhe/: labeled homomorphic encryption over Joye-Libert and Paillier on GMP, and the roles of
# generated labeled programs (included by runtime/CMakeLists.txt). Above math/ (thread cap) and
# program/ (arguments, .npy, atomic output); nothing below depends on it.
target_sources(hec_runtime PRIVATE
  labhe/bigint.cpp
  labhe/ahe.cpp
  labhe/prf.cpp
  labhe/multiexp.cpp
  labhe/plan.cpp
  labhe/files.cpp
  labhe/program.cpp
)
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/labhe/ahe_test.cpp
    tests/labhe/multiexp_test.cpp
    tests/labhe/labhe_test.cpp
  )
endif()
if(HEC_BUILD_BENCHMARKS)
  add_executable(hec_bench_labhe bench/labhe_bench.cpp)
  target_link_libraries(hec_bench_labhe PRIVATE hec_runtime)
endif()
