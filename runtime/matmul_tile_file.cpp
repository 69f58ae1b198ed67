#include "runtime/matmul_tile_file.h"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "base/atomic_file.h"
#include "base/content_hash.h"
#include "base/json.h"
#include "base/json_writer.h"
#include "base/regular_file.h"
#include "base/whole_file.h"
#include "remat_shaders/kernel_id.h"

namespace remat {

namespace {

constexpr const char* kFormat = "remat matmul tiles";
constexpr double kFormatVersion = 1;

void warn(const std::string& what) {
  std::fprintf(stderr, "remat: warning: %s\n", what.c_str());
}

const JsonValue* member(const JsonValue& v, const char* name, JsonValue::Type type) {
  const JsonValue* m = v.find(name);
  return m && m->type == type ? m : nullptr;
}

bool string_is(const JsonValue& root, const char* name, const std::string& want) {
  const JsonValue* m = member(root, name, JsonValue::Type::string);
  return m && m->string == want;
}

bool number_is(const JsonValue& root, const char* name, double want) {
  const JsonValue* m = member(root, name, JsonValue::Type::number);
  return m && m->number == want;
}

// [rows, cols, wx] as whole numbers below 2^16, or nullopt.
std::optional<MatmulTile> tile_of(const JsonValue& v) {
  if (v.type != JsonValue::Type::array || v.array.size() != 3) return std::nullopt;
  uint32_t f[3];
  for (std::size_t i = 0; i < 3; ++i) {
    const JsonValue& e = v.array[i];
    if (e.type != JsonValue::Type::number || e.number < 1 || e.number > 65535 ||
        e.number != static_cast<double>(static_cast<uint32_t>(e.number)))
      return std::nullopt;
    f[i] = static_cast<uint32_t>(e.number);
  }
  return MatmulTile{f[0], f[1], f[2]};
}

}  // namespace

MatmulTileFileKey matmul_tile_file_key(const Device& device) {
  Fnv1a64 h;
  for (KernelId k : {KernelId::matmul_outer_texels, KernelId::matmul_dot_texels})
    h.update(std::as_bytes(kernel_spirv(k)));
  return {pipeline_cache_key(device), h.digest()};
}

std::filesystem::path matmul_tile_file(const std::filesystem::path& dir,
                                       const MatmulTileFileKey& key) {
  return dir / ("matmul-tiles-" + device_uuid_hex(key.device) + ".json");
}

std::string encode_matmul_tiles(const MatmulTileFileKey& key, const MatmulTileTable& tiles) {
  JsonWriter j(2);
  j.begin_object()
      .field("format", kFormat)
      .field("version", kFormatVersion)
      .field("remat", key.device.remat_version)
      .field("device_uuid", device_uuid_hex(key.device))
      .field("driver_version", key.device.driver_version)
      .field("kernels", hash_hex(key.kernels));
  j.key("tiles").begin_object();
  for (const auto& [c, t] : tiles) {
    j.key(matmul_class_key(c)).begin_array().value(t.rows).value(t.cols).value(t.wx).end_array();
  }
  j.end_object().end_object();
  return j.str() + "\n";
}

std::optional<MatmulTileTable> decode_matmul_tiles(std::string_view text,
                                                   const MatmulTileFileKey& key, std::string& why) {
  JsonValue root;
  try {
    root = parse_json(text);
  } catch (const std::invalid_argument& e) {
    why = std::string("not valid JSON (") + e.what() + ")";
    return std::nullopt;
  }
  if (!string_is(root, "format", kFormat) || !number_is(root, "version", kFormatVersion)) {
    why = "not a remat matmul tile file of version 1";
    return std::nullopt;
  }
  if (!string_is(root, "device_uuid", device_uuid_hex(key.device)) ||
      !number_is(root, "driver_version", key.device.driver_version)) {
    why = "measured on another device or driver version";
    return std::nullopt;
  }
  if (!string_is(root, "remat", key.device.remat_version) ||
      !string_is(root, "kernels", hash_hex(key.kernels))) {
    why = "measured with other matmul kernels (another remat build)";
    return std::nullopt;
  }
  const JsonValue* tiles = member(root, "tiles", JsonValue::Type::object);
  if (!tiles) {
    why = "has no \"tiles\" object";
    return std::nullopt;
  }
  MatmulTileTable out;
  for (const auto& [name, value] : tiles->object) {
    const std::optional<MatmulClass> c = parse_matmul_class(name);
    const std::optional<MatmulTile> t = tile_of(value);
    if (!c || !t || !matmul_tile_fits(c->kernel, c->x_mode, *t)) {
      why = "entry \"" + name + "\" is not a shape class with a tile its kernel can run";
      return std::nullopt;
    }
    out[*c] = *t;
  }
  return out;
}

MatmulTileTable load_matmul_tiles(const std::filesystem::path& file, const MatmulTileFileKey& key) {
  std::string text;
  try {
    text = read_whole_file(file);
  } catch (const NotRegularFile& e) {
    warn(std::string(e.what()) + "; measuring matmul tiles afresh");
    return {};
  } catch (const std::invalid_argument&) {
    return {};  // not measured yet
  }
  std::string why;
  if (auto tiles = decode_matmul_tiles(text, key, why)) return *tiles;
  warn(file.string() + ": " + why + "; measuring matmul tiles afresh");
  return {};
}

bool save_matmul_tiles(const std::filesystem::path& file, const MatmulTileFileKey& key,
                       const MatmulTileTable& tiles) {
  try {
    std::filesystem::create_directories(file.parent_path());
    write_file_atomically(file, encode_matmul_tiles(key, tiles));
    return true;
  } catch (const std::exception& e) {
    warn(file.string() + ": cannot save the matmul tiles (" + e.what() + ")");
    return false;
  }
}

}  // namespace remat
