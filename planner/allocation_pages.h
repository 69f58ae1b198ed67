// How a buffer the planner lays out (the persistent buffer, the arena) is split into device
// allocations. Vulkan caps one vkAllocateMemory at maxMemoryAllocationSize (1 GiB guaranteed by
// Vulkan 1.1's maintenance3, 2 GiB on lavapipe) and a binding must lie inside one allocation, so
// a buffer larger than that is a row of pages of `page_bytes` each (the last one shorter), and no
// tensor may cross a page boundary: one that would is moved to the next page, the gap counted in
// the buffer's size. A buffer that fits one page keeps the offsets it had without pages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace remat {

// Vulkan 1.1 guarantees maxMemoryAllocationSize >= 2^30 bytes and maxMemoryAllocationCount >=
// 4096 (the spec's "Required Limits" table). A plan made without a device assumes lavapipe's
// 2 GiB, the device remat is tested on, rather than the guaranteed 1 GiB, which the f32
// embeddings of Gemma 3 1B and Llama 3.2 3B exceed; and the guaranteed count.
constexpr uint64_t kDevicelessAllocationLimit = uint64_t(1) << 31;
constexpr uint32_t kSmallestAllocationCount = 4096;

// The device's allocation limits, as the planner reads them. Zeros mean "no limit".
struct AllocationLimits {
  uint64_t max_allocation_bytes = 0;  // maxMemoryAllocationSize
  uint32_t max_allocation_count = 0;  // maxMemoryAllocationCount
};

// The page size of buffers whose offsets are multiples of `alignment`: the allocation limit
// rounded down to the alignment (0: one page, however large).
uint64_t page_bytes(const AllocationLimits& limits, uint64_t alignment);

// The first offset at or after `offset` where `size` bytes lie inside one page (page 0: offset).
uint64_t place_in_page(uint64_t offset, uint64_t size, uint64_t page);

// Items placed one after another in the order given, each in the first page whose free tail
// holds it (first fit), a new page when none does: without pages, or when all fit one, exactly
// the offsets of packing them end to end. `sizes` are already aligned; page 0 means no pages.
struct PackedPages {
  std::vector<uint64_t> offsets;  // per item
  uint64_t bytes = 0;             // the buffer: the end of the last page's last item
  uint64_t padding = 0;           // bytes - the sum of sizes: page tails left empty
};
PackedPages pack_in_pages(const std::vector<uint64_t>& sizes, uint64_t page);

// The allocation sizes of a buffer of `total` bytes in pages: full pages, then the rest. One
// allocation of `total` when page is 0 or at least total; none for an empty buffer.
std::vector<uint64_t> page_sizes(uint64_t total, uint64_t page);

// std::invalid_argument naming the tensor, its size and the limit when `bytes` exceed one page
// (no placement can hold it in one allocation), ending with `remedy` ("use a smaller model").
void check_fits_page(const std::string& tensor, uint64_t bytes, uint64_t page,
                     const std::string& remedy);

}  // namespace remat
