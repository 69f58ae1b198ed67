# Every Catch2 test case name must survive ctest's registration. catch_discover_tests writes each
# name into a CMake list, and CMake splits lists at ';': a case named "a; b" became two ctest
# entries, "a" and " b", that matched no case, ran nothing and passed. Commas and brackets are
# escaped by the discovery script, so only ';' is refused. Usage: cmake -DROOT=DIR -P this file.
file(GLOB_RECURSE sources RELATIVE "${ROOT}" "${ROOT}/*.cpp")
# Fixtures below ROOT are checked only when ROOT is the fixture.
list(FILTER sources EXCLUDE REGEX "_fixture/")
set(bad 0)
foreach(src IN LISTS sources)
  file(STRINGS "${ROOT}/${src}" lines REGEX "(TEST_CASE|SCENARIO|TEMPLATE_TEST_CASE)\\(\"")
  foreach(line IN LISTS lines)
    if(line MATCHES "(TEST_CASE|SCENARIO|TEMPLATE_TEST_CASE)\\(\"[^\"]*;")
      message("${src}: a test case name holds ';', which ctest splits: ${line}")
      math(EXPR bad "${bad} + 1")
    endif()
  endforeach()
endforeach()
if(bad GREATER 0)
  message(FATAL_ERROR "${bad} test case name(s) hold ';'")
endif()
