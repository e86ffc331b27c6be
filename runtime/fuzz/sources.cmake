# fuzz/: libFuzzer harnesses for every deserializer (included by runtime/CMakeLists.txt when
# HEC_BUILD_FUZZERS is on: clang only, the "fuzz" preset) and the seed-corpus generator.
foreach(name container ckks bfv fhew gates meta npy)
  add_executable(hec_fuzz_${name} fuzz/fuzz_${name}.cpp)
  target_link_libraries(hec_fuzz_${name} PRIVATE hec_runtime)
  target_link_options(hec_fuzz_${name} PRIVATE -fsanitize=fuzzer)
endforeach()
add_executable(hec_fuzz_seeds fuzz/make_seeds.cpp)
target_link_libraries(hec_fuzz_seeds PRIVATE hec_runtime)
