#include "io/safetensors_writer.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace strata {

void SafetensorsWriter::add(std::string name, DType dtype, std::vector<int64_t> shape, Fill fill) {
  uint64_t n = uint64_t(dtype_size(dtype));
  for (int64_t d : shape) n *= uint64_t(d);
  names_.push_back(name);
  entries_.push_back(Entry{std::move(name), dtype, std::move(shape), data_bytes_, data_bytes_ + n, std::move(fill)});
  data_bytes_ += n;
}

void SafetensorsWriter::write() {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata_.empty()) h["__metadata__"] = metadata_;
  for (auto& e : entries_)
    h[e.name] = {{"dtype", std::string(dtype_name(e.dtype))}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  std::string hs = h.dump();
  while ((8 + hs.size()) % 8) hs.push_back(' ');  // data starts 8-byte aligned, as the format recommends

  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path_.c_str(), "wb"), std::fclose);
  if (!f) throw Error(path_ + ": cannot create: " + std::strerror(errno));
  auto put = [&](const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f.get()) != n) throw Error(path_ + ": write failed: " + std::strerror(errno));
  };
  uint8_t len[8];
  uint64_t hl = hs.size();
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(hl >> (8 * i));
  put(len, 8);
  put(hs.data(), hs.size());
  std::vector<uint8_t> buf;
  for (auto& e : entries_) {
    buf.assign(e.end - e.begin, 0);
    e.fill(buf.data(), buf.size());
    put(buf.data(), buf.size());
  }
  if (std::fflush(f.get()) != 0) throw Error(path_ + ": write failed: " + std::strerror(errno));
}

}  // namespace strata
