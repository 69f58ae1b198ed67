// When the four-floats-per-iteration texel kernels apply, and the views they read through.
#include <catch2/catch.hpp>

#include "runtime/kernels/vec4_texels.h"

using namespace remat;
using kernels::vec4_texels_apply;

namespace {

const VkBuffer kBuffer = reinterpret_cast<VkBuffer>(uintptr_t(0x10));

DeviceQuirks texels(bool on) {
  DeviceQuirks q;
  q.texel_fetch_beats_storage_loads = on;
  return q;
}

TEST_CASE("vec4 texel kernels need the quirk, whole vec4s and aligned slices that hold them") {
  const BufferSlice a{kBuffer, 256, 64 * 4}, b{kBuffer, 1024, 64 * 4};
  CHECK(vec4_texels_apply(texels(true), {a, b}, 64));
  CHECK_FALSE(vec4_texels_apply(texels(false), {a, b}, 64));
  CHECK_FALSE(vec4_texels_apply(texels(true), {a, b}, 0));
  CHECK_FALSE(vec4_texels_apply(texels(true), {a, b}, 62));  // not whole vec4s
  CHECK_FALSE(vec4_texels_apply(texels(true), {a, {kBuffer, 1028, 64 * 4}}, 64));  // off a texel
  CHECK_FALSE(vec4_texels_apply(texels(true), {a, {kBuffer, 1024, 60 * 4}}, 64));  // too short
  CHECK(vec4_texels_apply(texels(true), {a, {kBuffer, 1024, 80 * 4}}, 64));        // longer is fine
}

TEST_CASE("vec4 texel views cover exactly the floats the kernel reads") {
  const Binding v = kernels::vec4_texels({kBuffer, 512, 4096}, 64);
  CHECK(v.slice.buffer == kBuffer);
  CHECK(v.slice.offset == 512);
  CHECK(v.slice.size == 64 * 4);
  CHECK_FALSE(v.writes);
  CHECK(v.texel_format == VK_FORMAT_R32G32B32A32_SFLOAT);
}

}  // namespace
