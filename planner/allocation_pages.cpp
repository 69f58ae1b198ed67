#include "planner/allocation_pages.h"

#include <algorithm>
#include <stdexcept>

namespace remat {

uint64_t page_bytes(const AllocationLimits& limits, uint64_t alignment) {
  if (limits.max_allocation_bytes == 0) return 0;
  const uint64_t a = std::max<uint64_t>(alignment, 1);
  // A page start must be a valid offset, so pages are whole multiples of the alignment.
  return std::max<uint64_t>(limits.max_allocation_bytes / a * a, a);
}

uint64_t place_in_page(uint64_t offset, uint64_t size, uint64_t page) {
  if (page == 0 || size == 0) return offset;
  const uint64_t start = offset / page * page;
  if (offset + size <= start + page) return offset;
  return start + page;
}

PackedPages pack_in_pages(const std::vector<uint64_t>& sizes, uint64_t page) {
  PackedPages out;
  std::vector<uint64_t> ends = {0};  // per page: the absolute offset of its free tail
  uint64_t used = 0;
  for (uint64_t size : sizes) {
    size_t p = 0;
    // Without pages everything goes to the one range; with them, the first page with room.
    while (page != 0 && p < ends.size() && ends[p] + size > (p + 1) * page) ++p;
    if (p == ends.size()) ends.push_back(p * page);
    out.offsets.push_back(ends[p]);
    ends[p] += size;
    used += size;
  }
  out.bytes = ends.back();
  out.padding = out.bytes - used;
  return out;
}

std::vector<uint64_t> page_sizes(uint64_t total, uint64_t page) {
  std::vector<uint64_t> sizes;
  if (page == 0) page = total;
  for (uint64_t start = 0; start < total; start += page)
    sizes.push_back(std::min(page, total - start));
  return sizes;
}

void check_fits_page(const std::string& tensor, uint64_t bytes, uint64_t page,
                     const std::string& remedy) {
  if (page == 0 || bytes <= page) return;
  throw std::invalid_argument("tensor '" + tensor + "' (" + std::to_string(bytes) +
                              " bytes) is larger than one device allocation of at most " +
                              std::to_string(page) + " bytes (maxMemoryAllocationSize); " + remedy);
}

}  // namespace remat
