# gdr_add_gtest(NAME <exe> LABEL host|rdma|gpu SOURCES ... [LIBS ...] [TIMEOUT s])
#
# Each gtest case becomes a CTest test (discovered when ctest runs). A test that needs
# environment variables sets them itself (setenv(..., 0) keeps the caller's): property lists
# do not survive gtest_discover_tests intact.
#
# Labels: `host` needs nothing; `rdma` needs a verbs device and GTEST_SKIPs without one (run them
# with tests/rxe-vm/run ctest -L rdma); `gpu` needs a CUDA device and GTEST_SKIPs without one.
find_package(GTest REQUIRED)
include(GoogleTest)
function(gdr_add_gtest)
  cmake_parse_arguments(T "" "NAME;LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE GTest::gtest GTest::gtest_main Threads::Threads ${T_LIBS})
  # GoogleTest.cmake marks GTEST_SKIP()ped cases as skipped itself (SKIP_REGULAR_EXPRESSION)
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS "${T_LABEL}" TIMEOUT ${T_TIMEOUT})
endfunction()
