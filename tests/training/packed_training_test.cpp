// Packed rows (formats/example_rows.h with pack): a micro-batch of several examples to a row gives
// the loss and gradients of the same examples each in its own row, to float rounding (the sums
// over rows run in another order), for GPT-2, the Llama family and Qwen3.5, fully trained, under
// LoRA and with the chunked head; and packed steps stay byte-identical across checkpoint policies,
// with dropout too, whose masks follow row positions (docs/DESIGN.md, "Packed rows"), so that
// packed and one example a row differ with dropout on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "formats/example_rows.h"
#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"

using namespace remat;

namespace {

constexpr int kSeq = 32;
// Qwen3.5's rows: five times as long, so that the chunkwise delta rule's 64-token blocks hold
// several examples and examples cross them.
constexpr int kQwen35Seq = 5 * kSeq;

// Examples of awkward lengths (1 .. 33 tokens: a one-position example, one cut to T + 1, at
// T = kSeq; `scale` times as long for rows of scale x kSeq), each with an untrained prompt of a
// few tokens, as a chat example has.
std::vector<TokenExample> examples(uint32_t vocab, std::size_t scale = 1) {
  const std::size_t lengths[] = {6, 13, 2, 21, 9, 40, 5, 17, 11, 3};
  std::vector<TokenExample> out;
  for (std::size_t i = 0; i < std::size(lengths); ++i) {
    TokenExample e;
    const std::size_t n = lengths[i] * scale;
    e.ids = test::random_indices(n, 300 + i, vocab);
    e.mask.assign(n, 1);
    for (std::size_t t = 0; t < std::min<std::size_t>(3, n - 1); ++t) e.mask[t] = 0;
    e.line = i + 1;
    out.push_back(std::move(e));
  }
  return out;
}

struct Run {
  std::vector<float> losses;
  // Per dropout RNG stream: (p, elements) of every step that draws its mask (forward,
  // recompute, backward), which with the seed and step is all a mask depends on; and the stream
  // each graph op draws from, read from every forward and recompute step.
  std::map<uint32_t, std::vector<std::pair<float, int64_t>>> masks;
  std::map<int, std::set<uint32_t>> stream_of_op;
  double recompute_flops = 0;
  std::vector<std::vector<float>> grads;  // after the last step, in parameter order
  std::vector<std::vector<float>> weights;
};

// Two AdamW steps on one batch of every example (the second step's gradients are taken where
// LoRA's B is no longer zero, so every adapter has a gradient).
// "auto" plans the smallest arena.
// Rows are the model's context long (each config sets it).
Run train(SessionConfig c, bool pack, const std::string& policy = "none") {
  const int seq = c.model.ctx;
  const ExampleRows rows(examples(uint32_t(c.model.vocab), std::size_t(seq / kSeq)), seq, 0,
                         "examples", std::nullopt, pack);
  const int batch = int(pack ? rows.packing().packed_rows : rows.size());
  c.shape.batch = batch;
  c.shape.seq = seq;
  c.shape.packed = pack;
  c.policy = Policy::parse(policy);
  if (policy == "auto")
    c.arena_budget =
        minimum_arena_bytes(c.model, c.shape, session_alignment(test::device()), nullptr, c.lora);
  const Batch b = rows.batch(0, batch);
  Session s(test::device(), c);
  Run r;
  r.recompute_flops = s.plan().report.recompute_flops;
  for (const Step& step : s.plan().steps) {
    if (step.kind != OpKind::dropout && step.kind != OpKind::dropout_backward) continue;
    r.masks[step.attrs.dropout_id].emplace_back(
        step.attrs.dropout_p, s.plan().tensors[step.outputs[0]].tensor.elements());
    if (step.kind == OpKind::dropout) r.stream_of_op[step.source_op].insert(step.attrs.dropout_id);
  }
  for (int step = 0; step < 2; ++step) r.losses.push_back(s.step(b.tokens, b.targets, b.positions));
  for (TensorId g : s.plan().parameter_grads) r.grads.push_back(s.values(g));
  for (TensorId p : s.plan().parameters) r.weights.push_back(s.values(p));
  return r;
}

// Each gradient element within `tol` of its tensor's largest magnitude.
double worst_difference(const std::vector<std::vector<float>>& a,
                        const std::vector<std::vector<float>>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t p = 0; p < a.size(); ++p) {
    REQUIRE(a[p].size() == b[p].size());
    double largest = 0;
    for (float x : b[p]) largest = std::max(largest, double(std::abs(x)));
    if (largest == 0) continue;
    for (std::size_t i = 0; i < a[p].size(); ++i)
      worst = std::max(worst, std::abs(double(a[p][i]) - double(b[p][i])) / largest);
  }
  return worst;
}

void require_packed_equals_plain(const SessionConfig& c, const char* what) {
  const Run packed = train(c, true), plain = train(c, false);
  for (std::size_t i = 0; i < plain.losses.size(); ++i)
    REQUIRE(packed.losses[i] == Approx(plain.losses[i]).epsilon(1e-6));
  const double worst = worst_difference(packed.grads, plain.grads);
  std::printf("packed vs one example a row, %s: losses %.7f %.7f, worst gradient %.2e\n", what,
              double(packed.losses[1]), double(plain.losses[1]), worst);
  REQUIRE(worst < 1e-5);
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

SessionConfig gpt2() {
  SessionConfig c = test::odd_gpt2_session();
  c.model.ctx = kSeq;
  c.optimizer.grad_clip = 0;  // the gradients themselves are compared
  // eps 1 makes AdamW's update nearly linear in the gradient, so the first step's rounding
  // differences stay rounding-sized in the second step's weights (accumulation_test.cpp).
  c.optimizer.eps = 1.0;
  return c;
}

SessionConfig llama() {
  SessionConfig c = gpt2();
  c.model = test::odd_llama(2, false);
  return c;
}

// Qwen3.5: three Gated DeltaNet layers (2 key heads, 4 value heads, dk 8, dv 12) and one gated
// attention layer; rows of 160 tokens, the delta rule in chunks of 64 (the chunkwise kernels'
// block), so examples start inside chunks and inside blocks too.
SessionConfig qwen35() {
  SessionConfig c = gpt2();
  ModelConfig& m = c.model;
  m = ModelConfig::preset("qwen3.5-tiny");
  m.dim = 48;
  m.head_size = 16;
  m.ffn = 80;
  m.vocab = 101;
  m.ctx = kQwen35Seq;
  m.tied_head = false;
  m.qwen35_layers = {4, 2, 4, 8, 12, 4, 0.25f, 0, {1, 1, 0}, true};
  c.shape.delta_chunk = 64;
  return c;
}

SessionConfig with_lora(SessionConfig c) {
  c.lora.rank = 4;
  c.lora.alpha = 8;
  return c;
}

}  // namespace

TEST_CASE("the examples under test pack 10 rows into 4") {
  const ExampleRows rows(examples(101), kSeq, 0, "examples", std::nullopt, true);
  REQUIRE(rows.size() == 10);
  REQUIRE(rows.packing().plain_rows == 10);
  REQUIRE(rows.packing().packed_rows == 4);
  REQUIRE(rows.packing().packed_padding() < rows.packing().plain_padding());
}

TEST_CASE("packed GPT-2 rows give the loss and gradients of one example a row") {
  require_packed_equals_plain(gpt2(), "gpt2");
}

TEST_CASE("packed GPT-2 rows under LoRA with a chunked head give one example a row's") {
  SessionConfig c = with_lora(gpt2());
  c.shape.loss_chunk = 64;
  require_packed_equals_plain(c, "gpt2 lora chunked");
}

TEST_CASE("packed Llama rows give the loss and gradients of one example a row") {
  require_packed_equals_plain(llama(), "llama");
}

TEST_CASE("packed Llama rows under LoRA with a chunked head give one example a row's") {
  SessionConfig c = with_lora(llama());
  c.shape.loss_chunk = 64;
  require_packed_equals_plain(c, "llama lora chunked");
}

TEST_CASE("packed Qwen3.5 rows give the loss and gradients of one example a row") {
  require_packed_equals_plain(qwen35(), "qwen3.5");
}

TEST_CASE("packed steps are byte-identical across checkpoint policies") {
  for (const SessionConfig& c : {gpt2(), llama(), with_lora(llama()), qwen35()}) {
    const Run none = train(c, true, "none");
    for (const char* policy : {"every:1", "selective"}) {
      INFO(policy);
      const Run other = train(c, true, policy);
      REQUIRE(other.losses == none.losses);
      for (std::size_t p = 0; p < none.weights.size(); ++p)
        REQUIRE(same_bytes(other.weights[p], none.weights[p]));
    }
  }
}

TEST_CASE("a packed step with dropout is byte-identical across policies, its masks alike") {
  SessionConfig c = gpt2();
  c.shape.dropout = 0.1f;
  const Run none = train(c, true, "none");
  REQUIRE(none.masks.size() == 1 + 2 * 3);  // the embedding's, attention's and the MLP's
  REQUIRE(none.stream_of_op.size() == none.masks.size());
  for (const auto& [id, draws] : none.masks) REQUIRE(draws.size() == 2);  // forward, backward
  for (float l : none.losses) REQUIRE(std::isfinite(l));
  for (const char* policy : {"every:1", "auto"}) {
    INFO(policy);
    const Run other = train(c, true, policy);
    REQUIRE(other.recompute_flops > 0);
    // Recomputed forwards draw again: each op from its own stream, with the same p and element
    // count as the forward's.
    REQUIRE(other.stream_of_op == none.stream_of_op);
    REQUIRE(other.masks.size() == none.masks.size());
    std::size_t recomputed = 0;
    for (const auto& [id, draws] : other.masks) {
      REQUIRE(none.masks.count(id));
      for (const auto& draw : draws) REQUIRE(draw == none.masks.at(id).front());
      recomputed += draws.size() - 2;
    }
    REQUIRE(recomputed > 0);
    REQUIRE(other.losses == none.losses);
    for (std::size_t p = 0; p < none.weights.size(); ++p)
      REQUIRE(same_bytes(other.weights[p], none.weights[p]));
  }
  // Masks are drawn by row position: an example packed elsewhere in a row sees another mask, so
  // packed rows give one example a row's loss only with dropout off (the tests above).
  const Run plain = train(c, false, "none");
  CHECK(plain.losses[0] != Approx(none.losses[0]).epsilon(1e-4));
}

TEST_CASE("a packed session refuses rows without valid positions, a plain one any positions") {
  SessionConfig c = gpt2();
  c.shape.batch = 1;
  c.shape.seq = 4;
  c.shape.packed = true;
  Session packed(test::device(), c);
  const std::vector<uint32_t> tokens = {1, 2, 3, 4}, targets = {2, 3, 4, 5};
  REQUIRE_THROWS_AS(packed.step(tokens, targets), std::invalid_argument);
  const std::vector<uint32_t> bad = {0, 1, 3, 0}, starts_late = {1, 2, 0, 1};
  REQUIRE_THROWS_WITH(packed.step(tokens, targets, bad),
                      Catch::Contains("neither 0 nor the previous id + 1"));
  REQUIRE_THROWS_WITH(packed.step(tokens, targets, starts_late),
                      Catch::Contains("rows start at 0"));
  const std::vector<uint32_t> good = {0, 1, 0, 1};
  REQUIRE(std::isfinite(packed.step(tokens, targets, good)));
  c.shape.packed = false;
  Session plain(test::device(), c);
  REQUIRE_THROWS_WITH(plain.step(tokens, targets, good), Catch::Contains("packed rows"));
}
