// libFuzzer target for the safetensors reader: any byte string is either parsed or refused with
// std::invalid_argument; never a crash, a hang, an out-of-bounds read or an absurd allocation.
// A file that parses must survive a write/read round trip unchanged (names, shapes, values).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  remat::SafetensorsContents parsed;
  try {
    parsed =
        remat::parse_safetensors(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string again = remat::serialize_safetensors(parsed.tensors, parsed.metadata);
  const remat::SafetensorsContents back = remat::parse_safetensors(again, "fuzz round trip");
  if (back.tensors.size() != parsed.tensors.size() || back.metadata != parsed.metadata)
    std::abort();
  for (std::size_t i = 0; i < back.tensors.size(); ++i) {
    const remat::NamedTensor& a = parsed.tensors[i];
    const remat::NamedTensor& b = back.tensors[i];
    if (a.name != b.name || a.shape != b.shape || a.values != b.values) std::abort();
  }
  return 0;
}
