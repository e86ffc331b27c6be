# fhew/: FHEW/TFHE-style boolean gates with AP and GINX bootstrapping (included by
# runtime/CMakeLists.txt).
target_sources(hec_runtime PRIVATE
  fhew/bootstrap.cpp
  fhew/fhew.cpp
  fhew/lwe.cpp
  fhew/params.cpp
)
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/fhew/fhew_test.cpp
  )
endif()
