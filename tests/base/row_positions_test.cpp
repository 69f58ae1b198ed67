// Position ids of packed rows: what a valid row is, and the plain rows' positions.
#include "base/row_positions.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace remat;

TEST_CASE("row positions start each row at 0 and either restart or count on") {
  CHECK(row_positions_error(std::vector<uint32_t>{0, 1, 2, 0, 0, 1, 0, 0}, 4).empty());
  CHECK(row_positions_error(std::vector<uint32_t>{0, 0, 0, 0}, 2).empty());
  CHECK_THAT(row_positions_error(std::vector<uint32_t>{0, 1, 2, 1}, 2),
             Catch::Contains("index 2 starts a row"));
  CHECK_THAT(row_positions_error(std::vector<uint32_t>{0, 2}, 2),
             Catch::Contains("position id 2 at index 1 is neither 0 nor the previous id + 1"));
  CHECK_THAT(row_positions_error(std::vector<uint32_t>{0, 1, 2}, 2),
             Catch::Contains("no whole number of rows"));
  std::vector<uint32_t> plain(6);
  fill_plain_positions(plain, 3);
  CHECK(plain == std::vector<uint32_t>{0, 1, 2, 0, 1, 2});
  CHECK(row_positions_error(plain, 3).empty());
}
