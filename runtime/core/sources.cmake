# core/: hybrid key switching shared by CKKS and BFV, and the serialization container (included by runtime/CMakeLists.txt).
target_sources(hec_runtime PRIVATE
  core/keyswitch.cpp
  core/serialize.cpp
)
if(HEC_BUILD_TESTS)
  target_sources(hec_runtime_tests PRIVATE
    tests/core/keyswitch_test.cpp
    tests/core/serialize_test.cpp
    tests/core/wipe_test.cpp
  )
endif()
