// Packing in the C API: examples loaded with options->pack give the library's packed rows and
// positions and report how full they are; a session created with params->packed trains on them
// with remat_session_step_packed, bit-identically to the library's Session (and through the C++
// wrappers); wrong combinations, bad positions and wrong struct sizes are clean errors.
#include <catch2/catch.hpp>

#include <cstddef>
#include <filesystem>
#include <vector>

#include "formats/example_rows.h"
#include "remat/remat.h"
#include "remat/remat.hpp"
#include "runtime/session.h"
#include "tests/api/api_test_params.h"
#include "tests/api/chat_files.h"
#include "tests/api/check_error.h"
#include "tests/api/tiny_tokenizer.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "text/chat_examples.h"
#include "text/tokenizer_files.h"

namespace fs = std::filesystem;

using remat::test::check_error;
using remat::test::Handles;

namespace {

constexpr int32_t kSeq = 192, kBatch = 2;

struct ChatFiles {
  remat::test::TempFolder d{"api_packing"};
  fs::path tokenizer = d / "tok", jsonl = d / "chat.jsonl";
  ChatFiles() {
    remat::test::write_tiny_tokenizer(tokenizer);
    remat::test::write_chat_config(tokenizer);
    remat::test::write_chats(jsonl, 7);
  }
};

remat::ExampleRows library_rows(const ChatFiles& f) {
  const auto tokenizer = remat::text::load_tokenizer(f.tokenizer);
  auto chat = remat::text::chat_examples_for(*tokenizer, f.tokenizer, std::nullopt);
  std::vector<remat::TokenExample> rows;
  for (remat::text::MaskedTokens& m : chat.encode_file(f.jsonl))
    rows.push_back({std::move(m.ids), std::move(m.mask), m.line});
  return remat::ExampleRows(std::move(rows), kSeq, 0, f.jsonl.string(), std::nullopt, true);
}

remat_examples* load_packed(const ChatFiles& f) {
  remat_examples_options o{};
  o.struct_size = sizeof o;
  o.seq = kSeq;
  o.pack = 1;
  remat_examples* e = nullptr;
  REQUIRE(remat_examples_load_with(f.jsonl.c_str(), f.tokenizer.c_str(), &o, &e) == REMAT_OK);
  return e;
}

remat_session_params packed_params() {
  remat_session_params p = remat::test::small_params();
  p.vocab = 261;  // the tiny tokenizer's
  p.ctx = kSeq;
  p.seq = kSeq;
  p.batch = kBatch;
  p.packed = 1;
  return p;
}

struct Rows {
  std::vector<uint32_t> tokens, targets, positions;
  explicit Rows(std::size_t n) : tokens(n), targets(n), positions(n) {}
};

}  // namespace

TEST_CASE("packed examples are the library's packed rows, with their positions and report") {
  ChatFiles f;
  remat_examples* e = load_packed(f);
  const remat::ExampleRows want = library_rows(f);
  Rows r(std::size_t(kBatch) * kSeq);
  for (uint64_t index = 0; index < 3; ++index) {
    REQUIRE(remat_examples_batch_packed(e, index, kBatch, r.tokens.data(), r.targets.data(),
                                        r.positions.data()) == REMAT_OK);
    const remat::Batch b = want.batch(index, kBatch);
    CHECK(r.tokens == b.tokens);
    CHECK(r.targets == b.targets);
    CHECK(r.positions == b.positions);
  }
  remat_packing_report report{};
  report.struct_size = sizeof report;
  REQUIRE(remat_examples_packing(e, &report) == REMAT_OK);
  CHECK(report.examples == 7);
  CHECK(report.plain_rows == 7);
  CHECK(report.packed_rows == want.packing().packed_rows);
  CHECK(report.packed_rows < report.plain_rows);
  CHECK(report.packed_padding < report.plain_padding);
  CHECK(report.packed == 1);
  report.struct_size = 8;
  check_error(remat_examples_packing(e, &report), REMAT_ERROR_INVALID_ARGUMENT, "struct_size");
  remat_examples_free(e);
}

TEST_CASE("a packed C API session trains bit-identically to the library's Session") {
  ChatFiles f;
  remat_examples* e = load_packed(f);
  Rows r(std::size_t(kBatch) * kSeq);
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  const remat_session_params p = packed_params();
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  remat::SessionConfig c;
  c.model = remat::ModelConfig{p.layers, p.dim, p.heads, p.vocab, p.ctx};
  c.shape.batch = kBatch;
  c.shape.seq = kSeq;
  c.shape.packed = true;
  c.optimizer.lr = p.learning_rate;
  c.seed = p.seed;
  remat::Session lib(remat::test::device(), c);
  for (uint64_t step = 0; step < 3; ++step) {
    REQUIRE(remat_examples_batch_packed(e, step, kBatch, r.tokens.data(), r.targets.data(),
                                        r.positions.data()) == REMAT_OK);
    float loss = 0;
    REQUIRE(remat_session_step_packed(h.session, r.tokens.data(), r.targets.data(),
                                      r.positions.data(), r.tokens.size(), &loss) == REMAT_OK);
    CHECK(loss == lib.step(r.tokens, r.targets, r.positions));
  }
  // A packed session needs the positions; bad ones are refused naming the first.
  float loss = 0;
  check_error(
      remat_session_step(h.session, r.tokens.data(), r.targets.data(), r.tokens.size(), &loss),
      REMAT_ERROR_INVALID_ARGUMENT, "position id per token");
  r.positions[5] = 9;
  check_error(remat_session_step_packed(h.session, r.tokens.data(), r.targets.data(),
                                        r.positions.data(), r.tokens.size(), &loss),
              REMAT_ERROR_INVALID_ARGUMENT, "at index 5");
  check_error(remat_session_step_packed(h.session, r.tokens.data(), r.targets.data(), nullptr,
                                        r.tokens.size(), &loss),
              REMAT_ERROR_INVALID_ARGUMENT, "positions");
  remat_examples_free(e);
}

TEST_CASE("a session without packed rows refuses positions, and older structs read as unpacked") {
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  remat_session_params p = remat::test::small_params();
  p.packed = 0x7777;  // beyond an older struct's size: never read
  p.struct_size = offsetof(remat_session_params, packed);
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  const std::size_t n = std::size_t(p.batch) * p.seq;
  std::vector<uint32_t> tokens(n, 1), targets(n, 2), positions(n, 0);
  float loss = 0;
  check_error(remat_session_step_packed(h.session, tokens.data(), targets.data(), positions.data(),
                                        n, &loss),
              REMAT_ERROR_INVALID_ARGUMENT, "without params->packed");
  REQUIRE(remat_session_step(h.session, tokens.data(), targets.data(), n, &loss) == REMAT_OK);
  // Options of another size are refused, naming the field.
  ChatFiles f;
  remat_examples_options o{};
  o.struct_size = sizeof o - 4;
  o.seq = kSeq;
  remat_examples* e = nullptr;
  check_error(remat_examples_load_with(f.jsonl.c_str(), f.tokenizer.c_str(), &o, &e),
              REMAT_ERROR_INVALID_ARGUMENT, "struct_size");
  check_error(remat_examples_load_with(f.jsonl.c_str(), f.tokenizer.c_str(), nullptr, &e),
              REMAT_ERROR_INVALID_ARGUMENT, "options is NULL");
}

TEST_CASE("the C++ wrappers load packed examples and step a packed session like the C calls") {
  ChatFiles f;
  const auto examples =
      remat::api::Examples::load_packed(f.jsonl.string(), f.tokenizer.string(), kSeq);
  CHECK(examples.packing().packed == 1);
  CHECK(examples.packing().packed_rows < examples.packing().plain_rows);
  auto device = remat::api::Device::open();
  remat::api::Session wrapped(device, packed_params());
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  const remat_session_params p = packed_params();
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  std::vector<uint32_t> tokens, targets, positions;
  for (uint64_t step = 0; step < 2; ++step) {
    examples.batch(step, kBatch, tokens, targets, positions);
    float loss = 0;
    REQUIRE(remat_session_step_packed(h.session, tokens.data(), targets.data(), positions.data(),
                                      tokens.size(), &loss) == REMAT_OK);
    CHECK(wrapped.step(tokens, targets, positions) == loss);
  }
  positions.pop_back();
  CHECK_THROWS_AS(wrapped.step(tokens, targets, positions), remat::api::Error);
}
