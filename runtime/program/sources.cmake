# program/: what every generated program needs above ckks (included by runtime/CMakeLists.txt):
# subcommand parsing, .npy I/O, atomic output, progress, resource figures.
target_sources(hec_runtime PRIVATE
  program/args.cpp
  program/arrays.cpp
  program/bfv_program.cpp
  program/ckks_program.cpp
  program/coeff_layout.cpp
  program/files.cpp
  program/manifest.cpp
  program/npy.cpp
  program/output.cpp
  program/progress.cpp
  program/resources.cpp
  program/roles.cpp
  program/server.cpp
)
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/program/args_test.cpp
    tests/program/bfv_program_test.cpp
    tests/program/chunk_split_test.cpp
    tests/program/ckks_program_test.cpp
    tests/program/diagonal_test.cpp
    tests/program/npy_test.cpp
    tests/program/output_test.cpp
    tests/program/progress_test.cpp
  )
endif()
