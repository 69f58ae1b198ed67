// The matmul tile file: what it holds, and that tiles measured for another device, driver or
// kernel build, or a damaged file, are never used.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>

#include "runtime/matmul_tile_file.h"
#include "tests/support/temp_folder.h"
#include "tests/support/watchdog.h"

using namespace remat;

namespace {

MatmulTileFileKey key() {
  MatmulTileFileKey k;
  k.device.driver_version = 0x5800006;
  k.device.device_uuid[0] = 0xab;
  k.device.device_uuid[15] = 0x01;
  k.device.remat_version = "0.3.0";
  k.kernels = 0x0123456789abcdefull;
  return k;
}

MatmulTileTable table() {
  return {{matmul_class(TexelMatmul::outer, 0, 256, 3072, 768), {8, 2, 8}},
          {matmul_class(TexelMatmul::outer, 4, 50257, 768, 256), {16, 2, 8}},
          {matmul_class(TexelMatmul::dot, 0, 256, 768, 3072), {16, 4, 32}}};
}

std::optional<MatmulTileTable> decode(const std::string& text, const MatmulTileFileKey& k,
                                      std::string* why = nullptr) {
  std::string w;
  auto t = decode_matmul_tiles(text, k, w);
  if (why) *why = w;
  CHECK(t.has_value() == w.empty());
  return t;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("matmul tiles read back as written, for the same device, driver and kernels") {
  const std::string text = encode_matmul_tiles(key(), table());
  CHECK(text.find("\"outer.x0.i1.j2.r2\"") != std::string::npos);
  const auto back = decode(text, key());
  REQUIRE(back.has_value());
  CHECK(*back == table());
  CHECK(decode(encode_matmul_tiles(key(), {}), key()) == MatmulTileTable{});
}

TEST_CASE("matmul tiles of another device, driver, remat or kernel build are not used") {
  const std::string text = encode_matmul_tiles(key(), table());
  std::string why;
  MatmulTileFileKey other = key();
  other.device.device_uuid[15] = 0x02;
  CHECK_FALSE(decode(text, other, &why));
  CHECK(why == "measured on another device or driver version");
  other = key();
  other.device.driver_version += 1;
  CHECK_FALSE(decode(text, other, &why));
  other = key();
  other.device.remat_version = "0.3.1";
  CHECK_FALSE(decode(text, other, &why));
  CHECK(why == "measured with other matmul kernels (another remat build)");
  other = key();
  other.kernels ^= 1;
  CHECK_FALSE(decode(text, other, &why));
}

TEST_CASE("a damaged matmul tile file is refused whole") {
  const std::string text = encode_matmul_tiles(key(), table());
  std::string why;
  CHECK_FALSE(decode(text.substr(0, text.size() / 2), key(), &why));
  CHECK(why.rfind("not valid JSON", 0) == 0);
  CHECK_FALSE(decode("[]", key(), &why));
  CHECK(why == "not a remat matmul tile file of version 1");
  CHECK_FALSE(decode(replaced(text, "\"version\": 1", "\"version\": 2"), key()));
  // A tile its kernel cannot run (mode 4 reads four rows per fetch), a tile of the wrong arity,
  // a class that does not exist.
  CHECK_FALSE(
      decode(replaced(text, "[\n      16,\n      2,", "[\n      6,\n      2,"), key(), &why));
  CHECK(why == "entry \"outer.x4.i2.j2.r1\" is not a shape class with a tile its kernel can run");
  CHECK_FALSE(decode(replaced(text, "[\n      8,\n      2,\n      8\n    ]", "[8, 2]"), key()));
  CHECK_FALSE(decode(replaced(text, "outer.x0.i1.j2.r2", "outer.x7.i1.j2.r2"), key()));
  CHECK_FALSE(decode(replaced(text, "[\n      8,\n      2,", "[\n      8.5,\n      2,"), key()));
}

TEST_CASE("matmul tiles are saved atomically and loaded, a bad file loads as nothing") {
  test::TempFolder dir("matmul_tiles");
  const auto file = matmul_tile_file(dir.path() / "cache", key());
  CHECK(file.filename() == "matmul-tiles-ab000000000000000000000000000001.json");
  CHECK(load_matmul_tiles(file, key()).empty());  // not measured yet
  REQUIRE(save_matmul_tiles(file, key(), table()));
  CHECK(load_matmul_tiles(file, key()) == table());
  MatmulTileFileKey other = key();
  other.kernels = 7;
  CHECK(load_matmul_tiles(file, other).empty());
  std::ofstream(file, std::ios::trunc) << "{";
  CHECK(load_matmul_tiles(file, key()).empty());
  // A folder that cannot be created is a warning, not an error.
  std::ofstream(dir / "plain") << "x";
  CHECK_FALSE(save_matmul_tiles(dir / "plain" / "sub" / "t.json", key(), table()));
}

TEST_CASE("a matmul tile file that is a FIFO is never opened: no tiles, and it stays a FIFO") {
  test::TempFolder dir("matmul_tiles_fifo");
  const auto file = dir / "tiles.json";
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);  // nothing opens it for writing: a read would block
  const test::Watchdog watchdog("loading matmul tiles from a FIFO", std::chrono::seconds(60));
  CHECK(load_matmul_tiles(file, key()).empty());
  CHECK_FALSE(save_matmul_tiles(file, key(), table()));  // refused, not renamed over it
  CHECK(std::filesystem::is_fifo(file));
  CHECK(dir.entries() == 1);
}
