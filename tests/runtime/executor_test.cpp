// The executor records once, inserts barriers where data depends, and replays deterministically.
#include <catch2/catch.hpp>

#include "matmul_texels_params.h"
#include "runtime/kernels/elementwise.h"
#include "tests/support/test_device.h"

using namespace remat;

TEST_CASE("a chain of dependent dispatches sees each previous result") {
  // fill a; copy a->b; copy b->c; copy c->a at an offset: every step reads the previous write.
  constexpr uint32_t n = 1000;
  Buffer a = test::garbage_buffer<float>(2 * n, "a");
  Buffer b = test::garbage_buffer<float>(n, "b");
  Buffer c = test::garbage_buffer<float>(n, "c");
  std::vector<Dispatch> ds;
  ds.push_back(kernels::fill(a.slice(0, n * 4), n, 3.5f));
  ds.push_back(kernels::copy(a.slice(0, n * 4), b.whole(), n));
  ds.push_back(kernels::copy(b.whole(), c.whole(), n));
  ds.push_back(kernels::copy(c.whole(), a.whole(), n, 0, n));
  Executor ex(test::kernels(), std::move(ds));
  CHECK(ex.barrier_count() == 3);
  ex.run();
  auto out = test::read<float>(a, 2 * n);
  for (uint32_t i = 0; i < 2 * n; ++i) REQUIRE(out[i] == 3.5f);
}

TEST_CASE("independent dispatches share no barrier, a write-after-read gets one") {
  constexpr uint32_t n = 64;
  Buffer a = test::garbage_buffer<float>(4 * n, "a");
  std::vector<Dispatch> ds;
  ds.push_back(kernels::fill(a.slice(0, n * 4), n, 1.0f));      // writes [0, n)
  ds.push_back(kernels::fill(a.slice(n * 4, n * 4), n, 2.0f));  // disjoint: no barrier
  ds.push_back(kernels::copy(a.slice(0, n * 4), a.slice(2 * n * 4, n * 4), n));  // RAW: barrier
  ds.push_back(kernels::fill(a.slice(0, n * 4), n, 5.0f));  // WAR on [0, n): barrier
  Executor ex(test::kernels(), std::move(ds));
  CHECK(ex.barrier_count() == 2);
  ex.run();
  auto out = test::read<float>(a, 3 * n);
  CHECK(out[0] == 5.0f);
  CHECK(out[n] == 2.0f);
  CHECK(out[2 * n] == 1.0f);  // the copy saw the first fill, not the later one
}

TEST_CASE("a recorded command buffer replays with new inputs") {
  constexpr uint32_t n = 300;
  Buffer src = test::garbage_buffer<float>(n, "src");
  Buffer dst = test::garbage_buffer<float>(n, "dst");
  Executor ex(test::kernels(), {kernels::copy(src.whole(), dst.whole(), n)});
  for (float v : {1.0f, -7.0f}) {
    std::vector<float> in(n, v);
    upload(test::device(), src, 0, in.data(), n * 4);
    ex.run();
    CHECK(test::read<float>(dst, n) == in);
  }
}

TEST_CASE("timestamps give one non-negative duration per dispatch") {
  Buffer a = test::garbage_buffer<float>(4096, "a");
  Executor ex(test::kernels(),
              {kernels::fill(a.whole(), 4096, 0.0f), kernels::fill(a.whole(), 4096, 1.0f)},
              ExecutorOptions{true});
  ex.run();
  auto ms = ex.dispatch_ms();
  REQUIRE(ms.size() == 2);
  for (double m : ms) CHECK(m >= 0.0);
}

TEST_CASE("dispatches that break device limits are refused before recording") {
  Buffer a = test::garbage_buffer<float>(64, "a");
  Dispatch bad = kernels::fill(a.whole(), 64, 0.0f);
  bad.bindings.push_back(bad.bindings[0]);  // fill declares one binding
  CHECK_THROWS_WITH(Executor(test::kernels(), {bad}), Catch::Contains("declares 1"));
  Dispatch misaligned = kernels::fill(a.slice(4, 16), 4, 0.0f);
  if (test::device().info().min_storage_buffer_offset_alignment > 4)
    CHECK_THROWS_WITH(Executor(test::kernels(), {misaligned}), Catch::Contains("not a multiple"));
  Dispatch zero = kernels::fill(a.whole(), 64, 0.0f);
  zero.groups = {0, 1, 1};
  CHECK_THROWS_WITH(Executor(test::kernels(), {zero}), Catch::Contains("group count"));
}

TEST_CASE("the SPIR-V reflection counts each kernel's bindings") {
  CHECK(spirv_binding_count(kernel_spirv(KernelId::fill)) == 1);
  CHECK(spirv_binding_count(kernel_spirv(KernelId::copy)) == 2);
  CHECK(spirv_binding_count(kernel_spirv(KernelId::matmul_forward)) == 4);
  CHECK(kernel_name(KernelId::matmul_forward) == "matmul_forward");
}

TEST_CASE("the SPIR-V reflection tells texel-buffer bindings from storage buffers") {
  const auto storage = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
             texels = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
  CHECK(spirv_binding_types(kernel_spirv(KernelId::matmul_forward)) ==
        std::vector<VkDescriptorType>{storage, storage, storage, storage});
  CHECK(spirv_binding_types(kernel_spirv(KernelId::matmul_outer_texels)) ==
        std::vector<VkDescriptorType>{texels, texels, storage, storage, texels});
  CHECK(spirv_binding_types(kernel_spirv(KernelId::matmul_dot_texels)) ==
        std::vector<VkDescriptorType>{texels, texels, storage, storage});
}

// A module declaring binding 0 as `(u)samplerBuffer` (sampled == 1) or `(u)textureBuffer`:
// OpTypeFloat, OpTypeImage Dim Buffer, [OpTypeSampledImage,] OpTypePointer UniformConstant,
// OpVariable, OpDecorate Binding 0.
static std::vector<uint32_t> texel_buffer_module(bool sampled_image) {
  constexpr uint32_t kFloat = 1, kImage = 2, kSampled = 3, kPtr = 4, kVar = 5;
  std::vector<uint32_t> w = {0x07230203u, 0x00010300u, 0, 6, 0};
  auto op = [&](uint32_t code, std::initializer_list<uint32_t> operands) {
    w.push_back(static_cast<uint32_t>(operands.size() + 1) << 16 | code);
    w.insert(w.end(), operands);
  };
  op(71, {kVar, 34, 0});                       // OpDecorate %var DescriptorSet 0
  op(71, {kVar, 33, 0});                       // OpDecorate %var Binding 0
  op(22, {kFloat, 32});                        // OpTypeFloat 32
  op(25, {kImage, kFloat, 5, 0, 0, 0, 1, 0});  // OpTypeImage %float Buffer 0 0 0 1 Unknown
  if (sampled_image) op(27, {kSampled, kImage});
  op(32, {kPtr, 0, sampled_image ? kSampled : kImage});  // UniformConstant
  op(59, {kPtr, kVar, 0});
  return w;
}

TEST_CASE("the SPIR-V reflection refuses a samplerBuffer, which SPIR-V 1.6 forbids") {
  CHECK(spirv_binding_types(texel_buffer_module(false)) ==
        std::vector<VkDescriptorType>{VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER});
  CHECK_THROWS_WITH(spirv_binding_types(texel_buffer_module(true)),
                    Catch::Contains("declare it a textureBuffer"));
}

TEST_CASE("no kernel reads a texel buffer through a sampled image") {
  // Mesa 25's SPIR-V front end warns about each one through the debug messenger, which fails
  // the tests there; textureBuffer is the same fetch without the sampler.
  for (std::size_t k = 0; k < kKernelCount; ++k) {
    INFO(kernel_name(static_cast<KernelId>(k)));
    CHECK_NOTHROW(spirv_binding_types(kernel_spirv(static_cast<KernelId>(k))));
  }
}

TEST_CASE("texel bindings that break the view rules are refused before recording") {
  Buffer x = test::garbage_buffer<float>(64, "x");
  Buffer c = test::garbage_buffer<float>(64, "c");
  auto dispatch = [&](Binding texel) {
    Dispatch d;
    d.kernel = KernelId::matmul_dot_texels;
    d.spec = {8, 1, 1, 4, 4};
    d.push = push_bytes(push::MatmulTexelsParams{});  // I = 0: every invocation returns at once
    d.bindings = {texel, {x.whole(), false}, {c.whole(), false}, {c.whole(), true}};
    return d;
  };
  CHECK_NOTHROW(Executor(test::kernels(), {dispatch({x.whole()})}));
  CHECK_THROWS_WITH(Executor(test::kernels(), {dispatch({x.slice(0, 20)})}),
                    Catch::Contains("whole number"));
  CHECK_THROWS_WITH(Executor(test::kernels(), {dispatch({x.slice(4, 16)})}),
                    Catch::Contains("not a multiple"));
  CHECK_THROWS_WITH(Executor(test::kernels(), {dispatch({x.whole(), true})}),
                    Catch::Contains("read-only"));
  // 16-bit views are kernels::texel_format's too; a format outside that table is refused.
  CHECK_THROWS_WITH(Executor(test::kernels(), {dispatch({x.whole(), false, VK_FORMAT_R8_UNORM})}),
                    Catch::Contains("is not one of kernels::texel_format's"));
}

TEST_CASE("GPU tests run under the Khronos validation layer") {
  // The layer ships in Debian's vulkan-validationlayers, which the suite's set-up installs.
  // Without it, "validation-clean" would be an unchecked claim.
  CHECK(test::device().instance().validation_enabled());
}

TEST_CASE("copies recorded before and after the dispatches move inputs in and results out") {
  constexpr uint32_t n = 100;
  Device& dev = test::device();
  Buffer io(dev, 2 * n * 4, MemoryCategory::staging, "io", true);
  Buffer a = test::garbage_buffer<float>(n, "a");
  Buffer b = test::garbage_buffer<float>(n, "b");
  ExecutorOptions opt;
  opt.before = {{io.handle(), a.handle(), 0, 0, n * 4}};
  opt.after = {{b.handle(), io.handle(), 0, n * 4, n * 4}};
  Executor ex(test::kernels(), {kernels::copy(a.whole(), b.whole(), n)}, opt);
  for (float v : {2.0f, -3.0f}) {
    auto* host = static_cast<float*>(io.mapped());
    for (uint32_t i = 0; i < n; ++i) host[i] = v + float(i);
    ex.run();
    for (uint32_t i = 0; i < n; ++i) REQUIRE(host[n + i] == v + float(i));
  }
}
