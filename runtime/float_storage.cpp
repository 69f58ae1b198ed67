#include "runtime/float_storage.h"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/half_float.h"
#include "formats/gguf_blocks.h"
#include "formats/gguf_types.h"

namespace remat {

namespace {

void check_sizes(std::size_t floats, std::size_t bytes, DType t) {
  if (t == DType::u32)
    throw std::logic_error("float storage: u32 tensors hold integers, not floats");
  if (uint64_t(floats) * dtype_bytes(t) != bytes)
    throw std::logic_error("float storage: " + std::to_string(floats) + " values of " +
                           std::string(dtype_name(t)) + " are not " + std::to_string(bytes) +
                           " bytes");
}

}  // namespace

void narrow_floats(std::span<const float> values, DType t, std::span<std::byte> out) {
  check_sizes(values.size(), out.size(), t);
  if (t == DType::f32) {
    std::memcpy(out.data(), values.data(), out.size());
    return;
  }
  const auto narrow = t == DType::f16 ? float_to_f16 : float_to_bf16;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = narrow(values[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
}

void widen_floats(std::span<const std::byte> in, DType t, std::span<float> out) {
  check_sizes(out.size(), in.size(), t);
  if (t == DType::f32) {
    std::memcpy(out.data(), in.data(), in.size());
    return;
  }
  const auto widen = t == DType::f16 ? f16_to_float : bf16_to_float;
  for (std::size_t i = 0; i < out.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, in.data() + 2 * i, 2);
    out[i] = widen(h);
  }
}

Staging::Fill fill_floats(DType t, ProduceFloats produce) {
  const uint64_t size = static_cast<uint64_t>(dtype_bytes(t));
  // f32 pieces are produced in place; narrower ones through a scratch that lives with the Fill.
  auto scratch = std::make_shared<std::vector<float>>();
  return
      [t, size, scratch, produce = std::move(produce)](std::span<std::byte> piece, uint64_t done) {
        const std::size_t n = piece.size() / size;
        if (t == DType::f32) {
          produce(done / size, {reinterpret_cast<float*>(piece.data()), n});
          return;
        }
        scratch->resize(n);
        produce(done / size, *scratch);
        narrow_floats(*scratch, t, piece);
      };
}

Staging::Drain drain_floats(DType t, ConsumeFloats consume) {
  const uint64_t size = static_cast<uint64_t>(dtype_bytes(t));
  auto scratch = std::make_shared<std::vector<float>>();
  return [t, size, scratch, consume = std::move(consume)](std::span<const std::byte> piece,
                                                          uint64_t done) {
    const std::size_t n = piece.size() / size;
    if (t == DType::f32) {
      consume(done / size, {reinterpret_cast<const float*>(piece.data()), n});
      return;
    }
    scratch->resize(n);
    widen_floats(piece, t, *scratch);
    consume(done / size, *scratch);
  };
}

StoredRange stored_range(const Tensor& t, uint64_t first, uint64_t count) {
  if (first + count > static_cast<uint64_t>(t.elements()))
    throw std::out_of_range("'" + t.name + "': elements past its end");
  if (t.dtype != DType::blocks) {
    const auto size = static_cast<uint64_t>(dtype_bytes(t.dtype));
    return {first * size, count * size, first};
  }
  const uint64_t values = t.blocks.block_values, bytes = t.blocks.block_bytes;
  const uint64_t b0 = first / values, b1 = (first + count + values - 1) / values;
  return {b0 * bytes, (b1 - b0) * bytes, b0 * values};
}

Staging::Drain drain_values(const Tensor& t, const StoredRange& range, ConsumeFloats consume) {
  if (t.dtype != DType::blocks)
    return drain_floats(t.dtype,
                        [first = range.first_stored, consume = std::move(consume)](
                            uint64_t at, std::span<const float> x) { consume(first + at, x); });
  // Staging pieces end anywhere: a block split between two waits in `carry` for its rest.
  struct State {
    std::vector<std::byte> carry;
    std::vector<float> values;
    uint64_t next = 0;
  };
  auto st = std::make_shared<State>();
  st->next = range.first_stored;
  const auto type = static_cast<GgmlType>(t.blocks.ggml_type);
  const std::size_t bb = t.blocks.block_bytes, bv = t.blocks.block_values;
  return
      [st, type, bb, bv, consume = std::move(consume)](std::span<const std::byte> piece, uint64_t) {
        st->carry.insert(st->carry.end(), piece.begin(), piece.end());
        const std::size_t blocks = st->carry.size() / bb;
        if (blocks == 0) return;
        st->values.resize(blocks * bv);
        decode_blocks(type, std::span(st->carry).first(blocks * bb), st->values);
        consume(st->next, st->values);
        st->next += blocks * bv;
        st->carry.erase(st->carry.begin(), st->carry.begin() + std::ptrdiff_t(blocks * bb));
      };
}

void download_values(Staging& staging, const BufferSlice& slice, const Tensor& t, uint64_t first,
                     std::span<float> out) {
  const StoredRange r = stored_range(t, first, out.size());
  BufferSlice part = slice;
  part.offset += r.offset;
  part.size = r.size;
  staging.download(part, drain_values(t, r, [&](uint64_t at, std::span<const float> x) {
                     // Whole blocks may reach past the request on either side.
                     for (std::size_t i = 0; i < x.size(); ++i)
                       if (at + i >= first && at + i < first + out.size())
                         out[std::size_t(at + i - first)] = x[i];
                   }));
}

}  // namespace remat
