// The number after "key": in a JSON text the `remat` CLI wrote (first occurrence; spaces after
// the colon or not), or -1 when the key is absent. Enough for tests that read one field.
#pragma once

#include <cstdlib>
#include <string>

namespace remat::test {

inline double json_number(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const std::size_t at = json.find(needle);
  if (at == std::string::npos) return -1;
  return std::strtod(json.c_str() + at + needle.size(), nullptr);
}

}  // namespace remat::test
