// Buffers laid out in device-allocation pages (planner/allocation_pages.h): random sizes,
// alignments and limits never put a tensor across a page boundary, offsets stay aligned, the
// pages sum to the buffer, and a limit above the buffer changes nothing; too large a tensor, an
// extra or too many allocations are refused by name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "planner/allocation_pages.h"
#include "planner/arena_layout.h"
#include "planner/memory_budget.h"
#include "planner/plan.h"
#include "planner/session_extras.h"
#include "planner/verify.h"
#include "tests/planner/random_chain.h"

namespace remat {
namespace {

uint64_t pick(std::mt19937_64& rng, uint64_t lo, uint64_t hi) {
  return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
}

bool crosses(uint64_t offset, uint64_t bytes, uint64_t page) {
  return page && bytes && offset / page != (offset + bytes - 1) / page;
}

uint64_t sum(const std::vector<uint64_t>& v) {
  uint64_t s = 0;
  for (uint64_t x : v) s += x;
  return s;
}

struct RandomItems {
  std::vector<uint64_t> sizes;
  std::vector<Interval> intervals;
};

RandomItems random_items(std::mt19937_64& rng) {
  RandomItems r;
  const int steps = int(pick(rng, 1, 30));
  const size_t n = pick(rng, 1, 60);
  for (size_t i = 0; i < n; ++i) {
    // Some items unused, some empty, sizes from a few bytes to a few KiB.
    const int first = pick(rng, 0, 9) == 0 ? -1 : int(pick(rng, 0, uint64_t(steps - 1)));
    const int last = first < 0 ? -1 : int(pick(rng, uint64_t(first), uint64_t(steps - 1)));
    r.intervals.push_back({first, last});
    r.sizes.push_back(pick(rng, 0, 7) == 0 ? 0 : pick(rng, 1, 5000));
  }
  return r;
}

}  // namespace

TEST_CASE("pages: a tensor that would cross a page starts the next one") {
  CHECK(place_in_page(100, 50, 0) == 100);
  CHECK(place_in_page(100, 50, 256) == 100);
  CHECK(place_in_page(200, 56, 256) == 200);  // ends exactly at the boundary
  CHECK(place_in_page(200, 57, 256) == 256);
  CHECK(place_in_page(300, 200, 256) == 300);
  CHECK(place_in_page(300, 250, 256) == 512);
  CHECK(page_sizes(0, 256).empty());
  CHECK(page_sizes(1000, 0) == std::vector<uint64_t>{1000});
  CHECK(page_sizes(1000, 4096) == std::vector<uint64_t>{1000});
  CHECK(page_sizes(1000, 256) == std::vector<uint64_t>{256, 256, 256, 232});
  CHECK(page_sizes(768, 256) == std::vector<uint64_t>{256, 256, 256});
  // Pages are whole multiples of the alignment, so every page starts at an aligned offset.
  CHECK(page_bytes({1000, 0}, 256) == 768);
  CHECK(page_bytes({0, 0}, 256) == 0);
  CHECK(page_bytes({100, 0}, 256) == 256);
}

TEST_CASE("pages: first fit fills earlier pages' tails and never crosses a page") {
  // 600 leaves 400 of the first page; 500 opens a second; 300 goes back to the first.
  const PackedPages p = pack_in_pages({600, 500, 300, 100}, 1000);
  CHECK(p.offsets == std::vector<uint64_t>{0, 1000, 600, 900});
  CHECK(p.bytes == 1500);
  CHECK(p.padding == 0);
  CHECK(pack_in_pages({600, 500}, 1000).padding == 400);
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    const uint64_t alignment = uint64_t(1) << pick(rng, 0, 8);
    const uint64_t page = alignment * pick(rng, 1, 64);
    std::vector<uint64_t> sizes(pick(rng, 1, 80));
    uint64_t total = 0;
    for (uint64_t& x : sizes) {
      x = alignment * pick(rng, 0, page / alignment);
      total += x;
    }
    INFO("trial " << trial << ", page " << page);
    const PackedPages packed = pack_in_pages(sizes, page);
    uint64_t end = 0;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (size_t i = 0; i < sizes.size(); ++i) {
      REQUIRE(packed.offsets[i] % alignment == 0);
      REQUIRE_FALSE(crosses(packed.offsets[i], sizes[i], page));
      end = std::max(end, packed.offsets[i] + sizes[i]);
      if (sizes[i]) ranges.push_back({packed.offsets[i], packed.offsets[i] + sizes[i]});
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) REQUIRE(ranges[i - 1].second <= ranges[i].first);
    REQUIRE(packed.bytes >= end);
    REQUIRE(packed.bytes - end < page);  // the last page ends at its last item
    REQUIRE(packed.padding == packed.bytes - total);
    REQUIRE(sum(page_sizes(packed.bytes, page)) == packed.bytes);
    // A page that holds everything packs end to end, as without pages.
    const PackedPages one = pack_in_pages(sizes, total + pick(rng, 0, 3) * alignment);
    const PackedPages none = pack_in_pages(sizes, 0);
    REQUIRE(none.bytes == total);
    REQUIRE(one.offsets == none.offsets);
    REQUIRE(one.bytes == total);
  }
}

TEST_CASE("pages: random arenas keep alignment, never cross a page, and fit the limit") {
  std::mt19937_64 rng(20261128);
  for (int trial = 0; trial < 400; ++trial) {
    const RandomItems items = random_items(rng);
    const uint64_t alignment = uint64_t(1) << pick(rng, 0, 8);
    const ArenaLayout whole = layout_arena(items.sizes, items.intervals, alignment);
    uint64_t largest = 0;
    for (size_t i = 0; i < items.sizes.size(); ++i)
      if (items.intervals[i].used())
        largest = std::max(largest, align_up(items.sizes[i], alignment));
    const uint64_t limit = pick(rng, std::max<uint64_t>(largest, 1), 3 * largest + 2 * alignment);
    const uint64_t page = page_bytes({limit, 0}, alignment);
    INFO("trial " << trial << ", alignment " << alignment << ", page " << page);
    REQUIRE(page % alignment == 0);
    REQUIRE(page >= largest);
    const ArenaLayout paged = layout_arena(items.sizes, items.intervals, alignment, page);
    uint64_t end = 0;
    for (size_t i = 0; i < items.sizes.size(); ++i) {
      if (!items.intervals[i].used() || items.sizes[i] == 0) continue;
      const uint64_t size = align_up(items.sizes[i], alignment);
      REQUIRE(paged.offsets[i] % alignment == 0);
      REQUIRE_FALSE(crosses(paged.offsets[i], size, page));
      end = std::max(end, paged.offsets[i] + size);
      for (size_t j = 0; j < i; ++j)
        if (items.intervals[j].used() && items.sizes[j] &&
            items.intervals[i].overlaps(items.intervals[j]))
          REQUIRE((paged.offsets[i] + size <= paged.offsets[j] ||
                   paged.offsets[j] + align_up(items.sizes[j], alignment) <= paged.offsets[i]));
    }
    REQUIRE(paged.arena_bytes == end);
    REQUIRE(sum(page_sizes(paged.arena_bytes, page)) == paged.arena_bytes);
    for (uint64_t s : page_sizes(paged.arena_bytes, page)) REQUIRE(s <= limit);
    // A page that holds the whole unpaged arena leaves every offset where it was.
    const ArenaLayout roomy =
        layout_arena(items.sizes, items.intervals, alignment,
                     page_bytes({whole.arena_bytes + pick(rng, 0, 4096), 0}, alignment));
    if (whole.arena_bytes > 0) {
      REQUIRE(roomy.arena_bytes == whole.arena_bytes);
      REQUIRE(roomy.offsets == whole.offsets);
    }
  }
}

TEST_CASE("pages: random training chains plan soundly under random allocation limits") {
  std::mt19937_64 rng(7);
  for (uint32_t seed = 0; seed < 40; ++seed) {
    const Graph g = testing::random_training_chain(seed, 1, 4, seed % 2 == 1);
    const uint64_t alignment = uint64_t(16) << pick(rng, 0, 4);
    const Policy policy = Policy::parse(seed % 3 == 0   ? "none"
                                        : seed % 3 == 1 ? "every:1"
                                                        : "sqrt");
    const Plan whole = plan_graph(g, {policy, std::nullopt, alignment, nullptr});
    uint64_t largest = 0;
    for (const PlannedTensor& t : whole.tensors)
      if (t.placement != Placement::unused)
        largest = std::max(largest, align_up(t.bytes, alignment));
    const uint64_t limit = pick(rng, largest, 4 * largest);
    INFO("seed " << seed << ", alignment " << alignment << ", limit " << limit);
    const Plan paged = plan_graph(g, {policy, std::nullopt, alignment, nullptr, {limit, 0}});
    REQUIRE(verify_plan(g, paged).empty());
    REQUIRE(paged.page_bytes == page_bytes({limit, 0}, alignment));
    REQUIRE(sum(paged.persistent_allocations) == paged.persistent_bytes);
    REQUIRE(sum(paged.arena_allocations) == paged.arena_bytes);
    for (const auto* sizes : {&paged.persistent_allocations, &paged.arena_allocations})
      for (uint64_t s : *sizes) REQUIRE(s <= limit);
    for (const PlannedTensor& t : paged.tensors) {
      if (t.placement == Placement::unused) continue;
      INFO(t.tensor.name);
      REQUIRE(t.offset % alignment == 0);
      REQUIRE_FALSE(crosses(t.offset, t.bytes, paged.page_bytes));
    }
    // The persistent buffer's padding is exactly what its layout skipped.
    uint64_t packed = 0;
    for (const PlannedTensor& t : paged.tensors)
      if (t.placement == Placement::persistent) packed += align_up(t.bytes, alignment);
    REQUIRE(paged.persistent_bytes == packed + paged.persistent_padding);
    // A limit at or above both buffers gives today's single-range plan, offset for offset.
    const uint64_t roomy = std::max(whole.persistent_bytes, whole.arena_bytes) + pick(rng, 0, 999);
    const Plan one = plan_graph(g, {policy, std::nullopt, alignment, nullptr, {roomy, 0}});
    REQUIRE(one.persistent_allocations.size() == 1);
    REQUIRE(one.arena_allocations.size() == 1);
    REQUIRE(one.persistent_padding == 0);
    REQUIRE(one.persistent_bytes == whole.persistent_bytes);
    REQUIRE(one.arena_bytes == whole.arena_bytes);
    for (size_t i = 0; i < whole.tensors.size(); ++i)
      REQUIRE(one.tensors[i].offset == whole.tensors[i].offset);
  }
}

TEST_CASE("pages: auto plans under an allocation limit fit their budget and verify") {
  const Graph g = build_training_gpt(ModelConfig::preset("tiny"), TrainShape{});
  const Plan none = plan_graph(g, {Policy{}, std::nullopt, 256, nullptr, {1 << 20, 0}});
  REQUIRE(none.arena_allocations.size() > 1);
  REQUIRE(none.persistent_allocations.size() > 1);
  const uint64_t budget = none.arena_bytes / 2;
  const Plan p = plan_graph(g, {Policy::parse("auto"), budget, 256, nullptr, {1 << 20, 0}});
  REQUIRE(p.arena_bytes <= budget);
  REQUIRE(verify_plan(g, p).empty());
}

TEST_CASE("pages: a tensor larger than one allocation is refused by name, size and limit") {
  // The token embedding, 4096 x 32 floats = 524,288 bytes, is the largest tensor; the logits of
  // 1 x 8 tokens are 131,072 bytes.
  const ModelConfig wide_vocab{2, 32, 2, 4096, 16};
  TrainShape shape;
  shape.batch = 1;
  shape.seq = 8;
  const auto planned = [&](const TrainShape& s, uint64_t limit) {
    return plan(wide_vocab, s, Policy{}, std::nullopt, 256, nullptr, {}, {limit, 0});
  };
  REQUIRE_NOTHROW(planned(shape, 524'288));
  REQUIRE_THROWS_WITH(planned(shape, 524'287), Catch::Contains("'wte.weight'") &&
                                                   Catch::Contains("524288 bytes") &&
                                                   Catch::Contains("524032 bytes") &&
                                                   Catch::Contains("maxMemoryAllocationSize") &&
                                                   Catch::Contains("smaller model"));
  // An activation: 8 x 16 tokens' logits are 2 MiB.
  TrainShape big = shape;
  big.batch = 8;
  big.seq = 16;
  REQUIRE_THROWS_WITH(planned(big, 1 << 20), Catch::Contains("logits") &&
                                                 Catch::Contains("2097152 bytes") &&
                                                 Catch::Contains("--batch"));
}

TEST_CASE("pages: the session's allocations are counted and refused above the device's count") {
  const ModelConfig tiny = ModelConfig::preset("tiny");
  const Plan p = plan(tiny, TrainShape{}, Policy{}, std::nullopt, 256, nullptr, {}, {1 << 20, 0});
  const SessionExtras x = session_extras(p, 0);
  const uint64_t count = session_allocation_count(p, x);
  REQUIRE(count == p.persistent_allocations.size() + p.arena_allocations.size() + 4);
  Plan limited = p;
  limited.allocation.max_allocation_count = uint32_t(count);
  REQUIRE_NOTHROW(session_extras(limited, 0));
  limited.allocation.max_allocation_count = uint32_t(count - 1);
  REQUIRE_THROWS_WITH(session_extras(limited, 0),
                      Catch::Contains(std::to_string(count) + " device allocations") &&
                          Catch::Contains("maxMemoryAllocationCount"));
  // An extra is bound whole, so it must fit one allocation too.
  Plan small_pages = p;
  small_pages.page_bytes = 256;
  REQUIRE_THROWS_WITH(session_extras(small_pages, 0),
                      Catch::Contains("step io staging") && Catch::Contains("256 bytes"));
}

}  // namespace remat

namespace remat {

TEST_CASE("pages: a memory budget chooses a loss chunk whose logits fit one allocation") {
  // Whole logits of 4 x 64 tokens over 4096 words are 4 MiB; at most 128 rows fit 2 MiB.
  const ModelConfig model{2, 32, 2, 4096, 64};
  MemoryRequest r;
  r.memory_budget = uint64_t(1) << 30;
  r.choose_loss_chunk = true;
  r.allocation = {2 << 20, 0};
  const MemoryPlan m = plan_memory(model, TrainShape{}, {}, r);
  CHECK(m.shape.loss_chunk > 0);
  CHECK(m.shape.loss_chunk <= 128);
  CHECK(m.plan.arena_allocations.size() >= 1);
  // A fixed policy that may choose keeps its chunk as well.
  r.policy = Policy{};
  CHECK(plan_memory(model, TrainShape{}, {}, r).shape.loss_chunk > 0);
  // Without the limit the whole logits are the fastest plan under the same budget.
  r.allocation = {};
  r.policy = Policy::parse("auto");
  CHECK(plan_memory(model, TrainShape{}, {}, r).shape.loss_chunk == 0);
}

}  // namespace remat
