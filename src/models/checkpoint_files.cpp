#include "models/checkpoint_files.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors_writer.h"

namespace strata::models {
namespace fs = std::filesystem;

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error(path + ": cannot write");
}

void copy_tokenizer_files(const std::string& from_dir, const std::string& to_dir) {
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
    const fs::path from = fs::path(from_dir) / name, to = fs::path(to_dir) / name;
    if (!fs::exists(from)) throw Error(from.string() + ": tokenizer file not found");
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error(from.string() + ": cannot copy to " + to.string() + ": " + ec.message());
    fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read,
                    fs::perm_options::replace, ec);
  }
}

uint64_t TensorToWrite::bytes() const {
  uint64_t n = uint64_t(dtype_size(dtype));
  for (auto d : shape) n *= uint64_t(d);
  return n;
}

void write_sharded_checkpoint(const std::string& out_dir, const std::vector<TensorToWrite>& tensors, uint64_t shard_bytes,
                              const std::function<void(uint64_t, uint64_t)>& progress) {
  const fs::path out(out_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error(out_dir + ": cannot create: " + ec.message());
  uint64_t total = 0, done = 0;
  for (const auto& t : tensors) total += t.bytes();
  if (!shard_bytes) shard_bytes = total < (4ull << 30) ? (256ull << 20) : (2ull << 30);
  std::vector<std::vector<size_t>> shards(1);
  uint64_t cur = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t b = tensors[i].bytes();
    if (cur > 0 && cur + b > shard_bytes) shards.emplace_back(), cur = 0;
    shards.back().push_back(i);
    cur += b;
  }
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  char fname[64];
  for (size_t s = 0; s < shards.size(); ++s) {
    std::snprintf(fname, sizeof fname, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    SafetensorsWriter w((out / fname).string());
    w.set_metadata("format", "pt");
    for (size_t i : shards[s]) {
      const TensorToWrite* t = &tensors[i];
      weight_map[t->name] = fname;
      w.add(t->name, t->dtype, t->shape, [&, t](uint8_t* dst, uint64_t nbytes) {
        t->fill(dst, nbytes);
        done += nbytes;
        if (progress) progress(done, total);
      });
    }
    w.write();
  }
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total}};
  index["weight_map"] = weight_map;
  write_text_file((out / "model.safetensors.index.json").string(), index.dump(2) + "\n");
}

}  // namespace strata::models
