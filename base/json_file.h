// A JSON file read whole (configs, indexes: small files), with errors that name the file.
#pragma once

#include <filesystem>

#include "base/json.h"

namespace remat {

// The document in `path`. std::invalid_argument "<path>: cannot open (...)", what
// base/regular_file.h says of a device, FIFO or socket, or
// "<path>: not valid JSON: <where>"; files over 100 MB are refused unread.
JsonValue read_json_file(const std::filesystem::path& path);

}  // namespace remat
