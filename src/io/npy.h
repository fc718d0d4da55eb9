// NumPy .npy files (format versions 1.0, 2.0, 3.0), little-endian, C order, for the element
// types goldens and logits use: f32, f64, i32, i64, u8, u16. Reading is strict: magic,
// version, header dict keys and syntax, dtype, fortran_order False, shape, and an exact
// file size are all checked; any mismatch throws Error naming the file.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace strata {

enum class NpyType { f32, f64, i32, i64, u8, u16 };

int npy_type_size(NpyType t);
const char* npy_descr(NpyType t);  // "<f4", ...

struct NpyArray {
  NpyType type = NpyType::f32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // numel × element size bytes, C order

  int64_t numel() const;
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data.data()); }
  // Values converted to float / double / int64 (any numeric type).
  std::vector<float> to_f32() const;
  std::vector<double> to_f64() const;
  std::vector<int64_t> to_i64() const;
};

NpyArray read_npy(const std::string& path);
// Parses an in-memory .npy image; `where` names it in errors.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& where);
void write_npy(const std::string& path, NpyType type, const std::vector<int64_t>& shape, const void* data);
inline void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  write_npy(path, NpyType::f32, shape, data);
}

}  // namespace strata
