# gdr_add_gtest(NAME <exe> LABEL host|rdma|gpu SOURCES ... [LIBS ...] [TIMEOUT s] [ENV VAR=v ...])
#
# Labels: `host` needs nothing; `rdma` needs a verbs device and GTEST_SKIPs without one (run them
# with tests/rxe-vm/run ctest -L rdma); `gpu` needs a CUDA device and GTEST_SKIPs without one.
find_package(GTest REQUIRED)
include(GoogleTest)
function(gdr_add_gtest)
  cmake_parse_arguments(T "" "NAME;LABEL;TIMEOUT" "SOURCES;LIBS;ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE GTest::gtest GTest::gtest_main Threads::Threads ${T_LIBS})
  # a list inside PROPERTIES would be split into separate arguments: escape it
  string(REPLACE ";" "\\;" T_ENV_ESCAPED "${T_ENV}")
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS "${T_LABEL}" TIMEOUT ${T_TIMEOUT}
                                  ENVIRONMENT "${T_ENV_ESCAPED}"
                                  SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\] ")
endfunction()
