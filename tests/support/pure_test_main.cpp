// Catch2 entry point for tests that need no device (graph/, planner/, cli/).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
