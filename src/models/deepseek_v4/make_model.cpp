#include "models/deepseek_v4/make_model.h"

#include "models/checkpoint_files.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/numfmt.h"
#include "io/safetensors_writer.h"
#include "models/deepseek_v4/tensors.h"

namespace strata::dsv4 {
namespace fs = std::filesystem;

namespace {

// --- deterministic random numbers, keyed by (seed, tensor, row) ---

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

struct Rng {
  uint64_t s;
  Rng(uint64_t seed, uint64_t a, uint64_t b = 0) : s(seed ^ (a * 0xD1B54A32D192ED03ull) ^ (b * 0x8CB92BA72F3D8DD7ull)) {
    splitmix(s);
  }
  uint64_t next() { return splitmix(s); }
  float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
  // Approximately standard normal: the sum of four uniforms, centred and scaled to unit
  // variance. Cheap, deterministic, with bounded tails.
  float normal() {
    uint64_t r = next();
    float s4 = float(r & 0xFFFF) + float((r >> 16) & 0xFFFF) + float((r >> 32) & 0xFFFF) + float(r >> 48);
    return (s4 * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
  }
};

bool ends_with(const std::string& s, const char* suf) {
  size_t n = std::strlen(suf);
  return s.size() >= n && s.compare(s.size() - n, n, suf) == 0;
}

// How values of a plain or quantized tensor are drawn: value = mean + std * normal.
struct Dist {
  float mean = 0, std = 1;
  bool comb_diag = false;  // hc_*_base: add to the comb diagonal so residual mixing starts near identity
};

Dist dist_for(const ExpectedTensor& t, const Config& c) {
  const std::string& n = t.name;
  const int64_t in = t.storage == Storage::fp4_weight ? t.shape.back() * 2 : t.shape.back();
  if (n == "embed.weight") return {0, 1};
  if (n == "head.weight") return {0, 3.0f / std::sqrt(float(c.hidden_size))};
  if (ends_with(n, "norm.weight")) return {1, 0.1f};
  if (ends_with(n, "attn_sink")) return {0, 1};
  if (ends_with(n, "_base")) return {0, 0.5f, ends_with(n, "hc_attn_base") || ends_with(n, "hc_ffn_base")};
  if (ends_with(n, "_scale") && t.dtype == DType::F32) return {1, 0.25f};
  if (ends_with(n, "ape")) return {0, 0.5f};
  if (ends_with(n, "gate.bias")) return {0, 0.1f};
  return {0, 1.0f / std::sqrt(float(in))};  // linear layers and hc_*_fn: unit-variance outputs
}

// Rows [r0, r1) of a float matrix with `cols` columns.
void gen_rows(const ExpectedTensor& t, const Dist& d, uint64_t seed, int64_t cols, int64_t r0, int64_t r1, float* out,
              const Config& c) {
  const uint64_t h = hash_name(t.name);
  for (int64_t r = r0; r < r1; ++r) {
    Rng rng(seed, h, uint64_t(r));
    float* o = out + (r - r0) * cols;
    for (int64_t j = 0; j < cols; ++j) o[j] = d.mean + d.std * rng.normal();
  }
  if (d.comb_diag) {  // [pre(hc), post(hc), comb(hc x hc)]
    const int64_t hc = c.hc_mult;
    for (int64_t i = 0; i < hc; ++i) out[2 * hc + i * hc + i] += 2.0f;
  }
}

// Gain 2^u, u in [-1, 1), per quantization block: makes scales differ between blocks the
// way trained weights' do, so tests see varied UE8M0 exponents.
float block_gain(uint64_t seed, const std::string& name, int64_t a, int64_t b) {
  Rng rng(seed ^ 0xA5A5A5A5ull, hash_name(name) + 7, uint64_t(a) * 1000003ull + uint64_t(b));
  return std::exp2(rng.uniform() * 2.0f - 1.0f);
}

void parallel_for(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& f) {
  threads = std::max(1, std::min<int>(threads, int(n)));
  if (threads == 1) {
    f(0, n);
    return;
  }
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) {
    int64_t a = n * i / threads, b = n * (i + 1) / threads;
    ts.emplace_back([&, a, b] { f(a, b); });
  }
  for (auto& t : ts) t.join();
}

class Generator {
 public:
  Generator(const Config& c, uint64_t seed, int threads) : c_(c), seed_(seed), threads_(threads) {}

  void fill(const ExpectedTensor& t, uint8_t* dst, uint64_t nbytes) {
    switch (t.storage) {
      case Storage::plain: return plain(t, dst);
      case Storage::fp8_weight: return fp8(t, dst);
      case Storage::fp4_weight: return fp4(t, dst);
      case Storage::scale: return scale(t, dst, nbytes);
    }
  }

 private:
  void plain(const ExpectedTensor& t, uint8_t* dst) {
    if (ends_with(t.name, "tid2eid")) return tid2eid(t, reinterpret_cast<int64_t*>(dst));
    const int64_t cols = t.shape.size() > 1 ? t.shape.back() : t.shape[0];
    const int64_t rows = t.shape.size() > 1 ? t.shape[0] : 1;
    const Dist d = dist_for(t, c_);
    parallel_for(rows, threads_, [&](int64_t r0, int64_t r1) {
      std::vector<float> buf(size_t((r1 - r0) * cols));
      gen_rows(t, d, seed_, cols, r0, r1, buf.data(), c_);
      for (int64_t i = 0; i < (r1 - r0) * cols; ++i) {
        const int64_t k = r0 * cols + i;
        if (t.dtype == DType::BF16) {
          uint16_t v = f32_to_bf16(buf[size_t(i)]);
          std::memcpy(dst + 2 * k, &v, 2);
        } else {
          std::memcpy(dst + 4 * k, &buf[size_t(i)], 4);
        }
      }
    });
  }

  void tid2eid(const ExpectedTensor& t, int64_t* out) {
    const int64_t V = t.shape[0], k = t.shape[1], E = c_.n_routed_experts;
    const uint64_t h = hash_name(t.name);
    parallel_for(V, threads_, [&](int64_t a, int64_t b) {
      std::vector<int64_t> perm(static_cast<size_t>(E));
      for (int64_t v = a; v < b; ++v) {
        Rng rng(seed_, h, uint64_t(v));
        for (int64_t e = 0; e < E; ++e) perm[size_t(e)] = e;
        for (int64_t i = 0; i < k; ++i) {  // partial Fisher-Yates: k distinct experts
          int64_t j = i + int64_t(rng.next() % uint64_t(E - i));
          std::swap(perm[size_t(i)], perm[size_t(j)]);
          out[v * k + i] = perm[size_t(i)];
        }
      }
    });
  }

  // FP8: per 128x128 block, scale = 2^ceil(log2(amax / 448)), q = e4m3(w / scale) (saturating).
  void fp8(const ExpectedTensor& t, uint8_t* dst) {
    const int64_t rows = t.shape[0], cols = t.shape[1];
    const int64_t B = c_.quantization_config.weight_block_rows, bc = (cols + B - 1) / B, br = (rows + B - 1) / B;
    std::vector<uint8_t> scales(size_t(br * bc));
    const Dist d = dist_for(t, c_);
    parallel_for(br, threads_, [&](int64_t b0, int64_t b1) {
      std::vector<float> w;
      for (int64_t bi = b0; bi < b1; ++bi) {
        const int64_t r0 = bi * B, r1 = std::min(rows, r0 + B);
        w.resize(size_t((r1 - r0) * cols));
        gen_rows(t, d, seed_, cols, r0, r1, w.data(), c_);
        for (int64_t bj = 0; bj < bc; ++bj) {
          const int64_t c0 = bj * B, c1 = std::min(cols, c0 + B);
          const float g = block_gain(seed_, t.name, bi, bj);
          float amax = 0;
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t j = c0; j < c1; ++j) {
              float& x = w[size_t((r - r0) * cols + j)];
              x *= g;
              amax = std::max(amax, std::fabs(x));
            }
          const uint8_t se = e8m0_ceil_from_f32(std::max(amax, 1e-30f) / kE4M3Max);
          scales[size_t(bi * bc + bj)] = se;
          const float inv = 1.0f / e8m0_to_f32(se);  // exact: a power of two
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t j = c0; j < c1; ++j) dst[r * cols + j] = f32_to_e4m3(w[size_t((r - r0) * cols + j)] * inv, true);
        }
      }
    });
    stash(t.name, std::move(scales));
  }

  // MXFP4: per row and 32 inputs, scale = 2^ceil(log2(amax / 6)), q = e2m1(w / scale).
  void fp4(const ExpectedTensor& t, uint8_t* dst) {
    const int64_t rows = t.shape[0], cols = t.shape[1] * 2, groups = cols / 32;
    std::vector<uint8_t> scales(size_t(rows * groups));
    const Dist d = dist_for(t, c_);
    parallel_for(rows, threads_, [&](int64_t r0, int64_t r1) {
      std::vector<float> w(static_cast<size_t>(cols));
      for (int64_t r = r0; r < r1; ++r) {
        gen_rows(t, d, seed_, cols, r, r + 1, w.data(), c_);
        for (int64_t gi = 0; gi < groups; ++gi) {
          const float g = block_gain(seed_, t.name, r, gi);
          float amax = 0;
          for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(w[size_t(gi * 32 + j)] *= g));
          const uint8_t se = e8m0_ceil_from_f32(std::max(amax, 1e-30f) / kE2M1Max);
          scales[size_t(r * groups + gi)] = se;
          const float inv = 1.0f / e8m0_to_f32(se);
          for (int j = 0; j < 32; j += 2) {
            uint8_t lo = f32_to_e2m1(w[size_t(gi * 32 + j)] * inv), hi = f32_to_e2m1(w[size_t(gi * 32 + j + 1)] * inv);
            dst[r * (cols / 2) + (gi * 32 + j) / 2] = uint8_t(lo | (hi << 4));
          }
        }
      }
    });
    stash(t.name, std::move(scales));
  }

  void scale(const ExpectedTensor& t, uint8_t* dst, uint64_t nbytes) {
    // The weight of this linear was generated just before (the expected list keeps each
    // weight next to its scale) and left its scales here.
    const std::string stem = t.name.substr(0, t.name.size() - 6);  // drop ".scale"
    std::lock_guard<std::mutex> lk(mu_);
    auto it = scales_.find(stem + ".weight");
    if (it == scales_.end() || it->second.size() != nbytes) throw Error("make-model: scale " + t.name + " before its weight");
    std::memcpy(dst, it->second.data(), nbytes);
    scales_.erase(it);
  }

  void stash(const std::string& name, std::vector<uint8_t> s) {
    std::lock_guard<std::mutex> lk(mu_);
    scales_[name] = std::move(s);
  }

  const Config& c_;
  uint64_t seed_;
  int threads_;
  std::mutex mu_;
  std::map<std::string, std::vector<uint8_t>> scales_;
};

}  // namespace

void make_model(const MakeModelOptions& opt) {
  const Config& c = opt.config;
  const std::vector<ExpectedTensor> all = expected_tensors(c);
  uint64_t total = 0;
  std::vector<uint64_t> sizes;
  for (const auto& t : all) {
    uint64_t n = uint64_t(dtype_size(t.dtype));
    for (auto d : t.shape) n *= uint64_t(d);
    sizes.push_back(n);
    total += n;
  }
  const uint64_t shard_bytes = opt.shard_bytes ? opt.shard_bytes : (total < (4ull << 30) ? (32ull << 20) : (2ull << 30));
  // Shards in expected order; a weight and its scale stay together.
  std::vector<std::vector<size_t>> shards(1);
  uint64_t cur = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const bool keep_with_prev = all[i].storage == Storage::scale;
    if (!keep_with_prev && cur > 0 && cur + sizes[i] > shard_bytes) {
      shards.emplace_back();
      cur = 0;
    }
    shards.back().push_back(i);
    cur += sizes[i];
  }

  std::error_code ec;
  fs::create_directories(opt.out_dir, ec);
  if (ec) throw Error(opt.out_dir + ": cannot create: " + ec.message());
  const fs::path out(opt.out_dir);
  const int threads = opt.threads > 0 ? opt.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  Generator gen(c, opt.seed, threads);

  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  uint64_t done = 0;
  char fname[64];
  for (size_t s = 0; s < shards.size(); ++s) {
    std::snprintf(fname, sizeof fname, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    SafetensorsWriter w((out / fname).string());
    w.set_metadata("format", "pt");
    // Wider dtypes first (as the safetensors library orders them): every tensor then starts at
    // an offset aligned to its element size, with no gaps, so readers may load in place. The
    // sort is stable, so each quantized weight still comes right before its scale.
    std::stable_sort(shards[s].begin(), shards[s].end(),
                     [&](size_t a, size_t b) { return dtype_size(all[a].dtype) > dtype_size(all[b].dtype); });
    for (size_t i : shards[s]) {
      const ExpectedTensor* t = &all[i];
      weight_map[t->name] = fname;
      w.add(t->name, t->dtype, t->shape, [&, t](uint8_t* dst, uint64_t n) {
        gen.fill(*t, dst, n);
        done += n;
        if (opt.progress) opt.progress(done, total);
      });
    }
    w.write();
  }
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total}};
  index["weight_map"] = weight_map;
  models::write_text_file((out / "model.safetensors.index.json").string(), index.dump(2) + "\n");
  nlohmann::ordered_json cfg_json = to_json(c);
  cfg_json["strata_random_weights"] = true;  // `strata generate` says so; other readers ignore the key
  models::write_text_file((out / "config.json").string(), cfg_json.dump(2) + "\n");
  nlohmann::ordered_json gen_cfg = {{"bos_token_id", c.bos_token_id}, {"eos_token_id", c.eos_token_id},
                                    {"do_sample", true}, {"temperature", 1.0}, {"top_p", 1.0}};
  models::write_text_file((out / "generation_config.json").string(), gen_cfg.dump(2) + "\n");
  if (!opt.tokenizer_dir.empty()) models::copy_tokenizer_files(opt.tokenizer_dir, opt.out_dir);
}

}  // namespace strata::dsv4
