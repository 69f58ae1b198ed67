// Every device allocation is accounted: bytes by category, live count, peak.
#include <catch2/catch.hpp>

#include "runtime/vulkan/arena.h"
#include "runtime/vulkan/buffer.h"
#include "tests/support/test_device.h"

using namespace remat;

TEST_CASE("the ledger counts buffers by category and returns to zero") {
  Device& dev = test::device();
  const MemoryStats before = dev.ledger().stats();
  {
    Buffer a(dev, 1000, MemoryCategory::persistent, "a");
    Buffer b(dev, 4096, MemoryCategory::staging, "b", true);
    const MemoryStats s = dev.ledger().stats();
    CHECK(s.bytes(MemoryCategory::persistent) - before.bytes(MemoryCategory::persistent) >= 1000);
    CHECK(s.bytes(MemoryCategory::staging) - before.bytes(MemoryCategory::staging) >= 4096);
    CHECK(s.allocation_count == before.allocation_count + 2);
    CHECK(s.peak_total_bytes >= s.total_live_bytes);
    CHECK(b.mapped() != nullptr);
    CHECK(a.mapped() == nullptr);
  }
  const MemoryStats after = dev.ledger().stats();
  CHECK(after.total_live_bytes == before.total_live_bytes);
  CHECK(after.allocation_count == before.allocation_count);
  CHECK(after.peak_total_bytes >= before.total_live_bytes + 1000 + 4096);
}

TEST_CASE("an arena is exactly its size, chunked only when asked") {
  Device& dev = test::device();
  const uint64_t base = dev.ledger().stats().bytes(MemoryCategory::arena);
  {
    Arena one(dev, 1 << 20);
    CHECK(one.chunk_count() == 1);
    CHECK(dev.ledger().stats().bytes(MemoryCategory::arena) - base == (1u << 20));
  }
  {
    Arena chunked(dev, 10000, 4096);  // forced small chunks, as a 2 GiB limit would on big arenas
    CHECK(chunked.chunk_count() == 3);
    CHECK(dev.ledger().stats().bytes(MemoryCategory::arena) - base == 10000);
    BufferSlice s = chunked.slice(4096 + 16, 64);
    CHECK(s.offset == 16);
    CHECK_THROWS_WITH(chunked.slice(4000, 200), Catch::Contains("chunk boundary"));
    CHECK_THROWS_WITH(chunked.slice(9990, 20), Catch::Contains("exceeds the arena"));
  }
  CHECK(dev.ledger().stats().bytes(MemoryCategory::arena) == base);
}

TEST_CASE("an arena allocates exactly the chunks its plan lists and refuses irregular ones") {
  Device& dev = test::device();
  const uint64_t base = dev.ledger().stats().bytes(MemoryCategory::arena);
  {
    const Arena planned(dev, std::vector<uint64_t>{4096, 4096, 100});
    CHECK(planned.chunk_count() == 3);
    CHECK(planned.size() == 8292);
    CHECK(dev.ledger().stats().bytes(MemoryCategory::arena) - base == 8292);
    CHECK(planned.slice(8192, 100).offset == 0);
  }
  CHECK_THROWS_WITH(Arena(dev, std::vector<uint64_t>{4096, 2048, 100}),
                    Catch::Contains("share one size"));
  CHECK_THROWS_WITH(Arena(dev, std::vector<uint64_t>{4096, 8192}),
                    Catch::Contains("share one size"));
  CHECK_THROWS_WITH(Arena(dev, std::vector<uint64_t>{}), Catch::Contains("at least 1 byte"));
  const uint64_t limit = dev.info().max_memory_allocation_size;
  CHECK_THROWS_WITH(Arena(dev, std::vector<uint64_t>{limit + 1}),
                    Catch::Contains("maxMemoryAllocationSize"));
  CHECK(dev.ledger().stats().bytes(MemoryCategory::arena) == base);
}

TEST_CASE("upload and download round-trip bytes at an offset") {
  Device& dev = test::device();
  Buffer b(dev, 256, MemoryCategory::persistent, "roundtrip");
  std::vector<uint32_t> data = {1, 2, 3, 0xDEADBEEF};
  upload(dev, b, 64, data.data(), data.size() * 4);
  CHECK(download<uint32_t>(dev, b, 4, 64) == data);
  CHECK_THROWS(upload(dev, b, 250, data.data(), 16));
}
