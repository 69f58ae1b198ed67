// Uploads and downloads of any size move through one small staging buffer, piece by piece, and
// fill_zero clears exactly the ranges it is given.
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>

#include "runtime/vulkan/staging.h"
#include "tests/support/test_device.h"

using namespace remat;

TEST_CASE("a staging buffer smaller than the data moves it in pieces, both ways") {
  std::vector<uint32_t> values(1000);
  std::iota(values.begin(), values.end(), 7u);
  Buffer dst = test::garbage_buffer<uint32_t>(1200, "staging test");
  Staging staging(test::device(), 100);  // rounded down to 96 bytes: 24 values per piece
  CHECK(staging.size() == 96);
  std::vector<uint64_t> starts;
  staging.upload(dst.slice(400, 4000), [&](std::span<std::byte> piece, uint64_t done) {
    starts.push_back(done);
    CHECK(piece.size() == std::min<uint64_t>(96, 4000 - done));
    std::memcpy(piece.data(), reinterpret_cast<const std::byte*>(values.data()) + done,
                piece.size());
  });
  CHECK(starts.size() == 42);  // ceil(4000 / 96)
  CHECK(starts.back() == 41 * 96);
  const auto all = test::read<uint32_t>(dst, 1200);
  CHECK(all[99] == 0xFFFFFFFFu);  // before the slice: untouched
  CHECK(std::vector<uint32_t>(all.begin() + 100, all.begin() + 1100) == values);
  CHECK(all[1100] == 0xFFFFFFFFu);

  std::vector<uint32_t> back(1000);
  staging.download(dst.slice(400, 4000), [&](std::span<const std::byte> piece, uint64_t done) {
    std::memcpy(reinterpret_cast<std::byte*>(back.data()) + done, piece.data(), piece.size());
  });
  CHECK(back == values);
}

TEST_CASE("fill_zero clears the given ranges and nothing else") {
  Buffer b = test::garbage_buffer<uint32_t>(64, "fill test");
  const BufferSlice ranges[] = {b.slice(0, 16), b.slice(100, 28)};
  fill_zero(test::device(), ranges);
  const auto v = test::read<uint32_t>(b, 64);
  for (std::size_t i = 0; i < 64; ++i) {
    INFO(i);
    const bool zeroed = i < 4 || (i >= 25 && i < 32);
    CHECK(v[i] == (zeroed ? 0u : 0xFFFFFFFFu));
  }
  const BufferSlice odd[] = {b.slice(2, 8)};
  CHECK_THROWS_AS(fill_zero(test::device(), odd), std::logic_error);
}

TEST_CASE("upload and download of a large buffer use bounded staging") {
  // 3 pieces of the default staging size and a remainder: values survive the round trip.
  const std::size_t n = 3 * Staging::kDefaultBytes / 4 + 12345;
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = float(i % 9973) * 0.5f;
  Buffer b(test::device(), n * 4, MemoryCategory::persistent, "large");
  const uint64_t live = test::device().ledger().stats().total_live_bytes;
  const uint64_t peak_before = test::device().ledger().stats().peak_total_bytes;
  upload(test::device(), b, 0, values.data(), n * 4);
  CHECK(test::read<float>(b, n) == values);
  CHECK(test::device().ledger().stats().total_live_bytes == live);
  // The staging buffer, not a copy of the whole data, is the only extra device memory.
  CHECK(test::device().ledger().stats().peak_total_bytes <=
        std::max(peak_before, live + Staging::kDefaultBytes + 65536));
}
