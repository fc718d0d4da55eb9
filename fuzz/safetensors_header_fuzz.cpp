// safetensors: the 8-byte header length, the JSON header, dtypes, shapes and data offsets of an
// untrusted file. Whatever the parser accepts must lie inside the file.
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "fuzz_input.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::SafetensorsHeader h;
  try {
    h = strata::parse_safetensors(data, size, "fuzz.safetensors");
  } catch (const strata::Error&) {
    return 0;
  }
  for (const auto& t : h.tensors) {
    FUZZ_CHECK(t.offset <= size && t.nbytes <= size - t.offset, t.name);
    FUZZ_CHECK(uint64_t(t.numel()) * uint64_t(strata::dtype_size(t.dtype)) == t.nbytes, t.name + " " + t.shape_str());
    if (t.nbytes) {
      volatile uint8_t first = data[t.offset], last = data[t.offset + t.nbytes - 1];
      (void)first;
      (void)last;
    }
  }
  return 0;
}
