// JSON files read whole, with errors that name the file.
#include "base/json_file.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "base/atomic_file.h"
#include "tests/support/temp_folder.h"

using namespace remat;

TEST_CASE("a JSON file is read, and every failure names it", "[base][json_file]") {
  test::TempFolder d("json_file");
  write_file_atomically(d / "good.json", R"({"a": [1, 2]})");
  CHECK(read_json_file(d / "good.json").find("a")->array.size() == 2);
  write_file_atomically(d / "bad.json", R"({"a": )");
  CHECK_THROWS_WITH(read_json_file(d / "bad.json"),
                    Catch::StartsWith((d / "bad.json").string() + ": not valid JSON: "));
  CHECK_THROWS_WITH(
      read_json_file(d / "missing.json"),
      Catch::StartsWith((d / "missing.json").string() + ": cannot open (No such file"));
  CHECK_THROWS_WITH(read_json_file(d.path()), Catch::Contains("is a folder, not a JSON file"));
}
