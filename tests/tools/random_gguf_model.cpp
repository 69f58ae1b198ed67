// Writes a GGUF model of a preset's shape with remat's seeded initial values, optionally quantized
// by llama.cpp's own quantizer (llama_model_quantize from the pinned libllama, dlopened): the
// files of the QLoRA memory and speed benchmarks (docs/benchmarks-gguf.md). No weights can be
// downloaded here; the bytes and the block mix are those of the real files of that shape.
//
//   remat_random_gguf_model PRESET[,dim=N][,ffn=N][,ctx=N] OUT.gguf [TYPE] [LAYERS] [SCALE]
//   remat_random_gguf_model --quantize IN.gguf OUT.gguf TYPE
//
// TYPE: F32 (default), or a llama.cpp preset name it quantizes to: Q8_0, Q4_K_M, Q4_K_S, Q5_K_M,
// Q6_K, Q4_0, Q3_K_M, Q2_K. LAYERS overrides the preset's layer count (0: the preset's). SCALE
// multiplies the matrices (default 1), for a model whose output depends strongly on each of them.
// --quantize quantizes a GGUF file written elsewhere (an architecture remat does not write yet).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <llama.h>

#include "formats/gguf_model_writer.h"
#include "formats/model_weights.h"
#include "graph/model_builder.h"

namespace fs = std::filesystem;
using namespace remat;

namespace {

struct Preset {
  const char* name;
  llama_ftype ftype;
};
constexpr Preset kPresets[] = {
    {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},     {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},
    {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S}, {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
    {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},     {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},
    {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M}, {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K}};

void write_f32(const ModelConfig& m, const fs::path& path, float scale) {
  const Graph g = build_model(m, TrainShape{1, 1});
  std::vector<GgufSourceTensor> tensors;
  std::vector<TensorSpec> specs;
  for (TensorId id : g.parameters) {
    tensors.push_back({g.tensor(id).name, g.tensor(id).shape});
    specs.push_back({g.tensor(id).name, g.tensor(id).shape});
  }
  write_gguf_model(path, m, tensors,
                   [&](std::size_t i, uint64_t first, std::span<float> out) {
                     initial_values(specs[i], m, 1, i, first, out);
                     if (specs[i].shape.size() == 2)
                       for (float& v : out) v *= scale;
                   },
                   {});
}

void quantize(const fs::path& from, const fs::path& to, llama_ftype ftype) {
  const fs::path lib = fs::path(REMAT_SOURCE_DIR) / "build-data/npm/node_modules/@node-llama-cpp/" /
                       "linux-x64/bins/linux-x64/libllama.v0.4.0.so";
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw std::runtime_error("cannot load " + lib.string() + " (.ci/fetch-test-data)");
  auto defaults = reinterpret_cast<decltype(&llama_model_quantize_default_params)>(
      dlsym(h, "llama_model_quantize_default_params"));
  auto run = reinterpret_cast<decltype(&llama_model_quantize)>(dlsym(h, "llama_model_quantize"));
  auto init = reinterpret_cast<decltype(&llama_backend_init)>(dlsym(h, "llama_backend_init"));
  auto log = reinterpret_cast<decltype(&llama_log_set)>(dlsym(h, "llama_log_set"));
  if (!defaults || !run || !init || !log)
    throw std::runtime_error(lib.string() + " lacks the quantizer");
  log(
      [](ggml_log_level level, const char* text, void*) {
        if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
      },
      nullptr);
  init();
  llama_model_quantize_params p = defaults();
  p.ftype = ftype;
  p.nthread = 2;
  if (run(from.c_str(), to.c_str(), &p) != 0) throw std::runtime_error("quantizing failed");
}

llama_ftype ftype_of(const std::string& type) {
  for (const Preset& p : kPresets)
    if (type == p.name) return p.ftype;
  throw std::invalid_argument("unknown type '" + type + "'");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--quantize") {
    try {
      quantize(argv[2], argv[3], ftype_of(argv[4]));
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "remat: error: %s\n", e.what());
      return 2;
    }
  }
  if (argc < 3 || argc > 6) {
    std::fprintf(stderr, "usage: %s PRESET OUT.gguf [F32|Q8_0|Q4_K_M|...] [LAYERS] [SCALE]\n",
                 argv[0]);
    return 2;
  }
  try {
    // The preset, then its width and MLP width overridden (rows of 256 values get K-quants).
    std::string spec = argv[1];
    ModelConfig m = ModelConfig::preset(spec.substr(0, spec.find(',')));
    for (std::size_t at = spec.find(','); at != std::string::npos; at = spec.find(',', at + 1)) {
      const std::string field = spec.substr(at + 1, spec.find(',', at + 1) - at - 1);
      if (field.rfind("dim=", 0) == 0)
        m.dim = std::atoi(field.c_str() + 4);
      else if (field.rfind("ffn=", 0) == 0)
        m.ffn = std::atoi(field.c_str() + 4);
      else if (field.rfind("ctx=", 0) == 0)  // context_length: llama.cpp trains on rows this long
        m.ctx = std::atoi(field.c_str() + 4);
      else
        throw std::invalid_argument("unknown override '" + field + "'");
    }
    m.validate();
    if (argc >= 5 && std::atoi(argv[4]) > 0) m.layers = std::atoi(argv[4]);
    const float scale = argc == 6 ? std::strtof(argv[5], nullptr) : 1.0f;
    const std::string type = argc >= 4 ? argv[3] : "F32";
    const fs::path out = argv[2];
    if (type == "F32") {
      write_f32(m, out, scale);
      return 0;
    }
    for (const Preset& p : kPresets) {
      if (type != p.name) continue;
      const fs::path f32 = out.string() + ".f32.tmp";
      write_f32(m, f32, scale);
      quantize(f32, out, p.ftype);
      fs::remove(f32);
      return 0;
    }
    std::fprintf(stderr, "remat: error: unknown type '%s'\n", type.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "remat: error: %s\n", e.what());
    return 2;
  }
}
