// A copy of a checkpoint directory without the tensors whose names start with a prefix, as
// converted and pruned checkpoints are published (the MTP block left out, say).
#pragma once
#include <cstring>
#include <filesystem>
#include <string>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"

namespace strata::test {

// Returns how many tensors were left out.
inline int copy_checkpoint_without(const std::string& from, const std::string& to, const std::string& prefix) {
  namespace fs = std::filesystem;
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from))
    if (e.path().extension() != ".safetensors" && e.path().filename() != "model.safetensors.index.json")
      fs::copy(e.path(), to / e.path().filename(), fs::copy_options::overwrite_existing);
  const SafetensorsCheckpoint ck = SafetensorsCheckpoint::open_dir(from);
  SafetensorsWriter w(to + "/model.safetensors");
  int dropped = 0;
  for (const TensorInfo* t : ck.all()) {
    if (t->name.rfind(prefix, 0) == 0) {
      ++dropped;
      continue;
    }
    const TensorRef ref = ck.ref(*t);
    w.add(t->name, t->dtype, t->shape, [ref](uint8_t* dst, uint64_t n) { std::memcpy(dst, ref.data, n); });
  }
  w.write();
  return dropped;
}

}  // namespace strata::test
