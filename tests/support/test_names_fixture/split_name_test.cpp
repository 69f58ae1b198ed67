// A fixture for tests/support/test_names.cmake: never compiled. Its one case name holds ';'.
TEST_CASE("a name; split by ctest") {}
