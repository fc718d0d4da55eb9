#include "io/npy.h"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "core/error.h"

namespace strata {

int npy_type_size(NpyType t) {
  switch (t) {
    case NpyType::f32: case NpyType::i32: return 4;
    case NpyType::f64: case NpyType::i64: return 8;
    case NpyType::u8: return 1;
    case NpyType::u16: return 2;
  }
  return 0;
}

const char* npy_descr(NpyType t) {
  switch (t) {
    case NpyType::f32: return "<f4";
    case NpyType::f64: return "<f8";
    case NpyType::i32: return "<i4";
    case NpyType::i64: return "<i8";
    case NpyType::u8: return "|u1";
    case NpyType::u16: return "<u2";
  }
  return "?";
}

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

template <class Out>
std::vector<Out> convert(const NpyArray& a) {
  const int64_t n = a.numel();
  std::vector<Out> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (a.type) {
      case NpyType::f32: v[size_t(i)] = Out(a.as<float>()[i]); break;
      case NpyType::f64: v[size_t(i)] = Out(a.as<double>()[i]); break;
      case NpyType::i32: v[size_t(i)] = Out(a.as<int32_t>()[i]); break;
      case NpyType::i64: v[size_t(i)] = Out(a.as<int64_t>()[i]); break;
      case NpyType::u8: v[size_t(i)] = Out(a.as<uint8_t>()[i]); break;
      case NpyType::u16: v[size_t(i)] = Out(a.as<uint16_t>()[i]); break;
    }
  }
  return v;
}

// A tiny parser for the one dict literal .npy headers contain.
struct HeaderParser {
  const std::string& s;
  const std::string& where;
  size_t i = 0;
  [[noreturn]] void fail(const std::string& what) const { throw Error(where + ": bad .npy header: " + what); }
  void ws() { while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i; }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) { ++i; return true; }
    return false;
  }
  void expect(char c) { if (!eat(c)) fail(std::string("expected '") + c + "'"); }
  std::string str() {
    ws();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) fail("expected a string");
    char q = s[i++];
    size_t b = i;
    while (i < s.size() && s[i] != q) ++i;
    if (i >= s.size()) fail("unterminated string");
    return s.substr(b, i++ - b);
  }
  int64_t integer() {
    ws();
    size_t b = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (b == i || i - b > 18) fail("expected a dimension");
    return std::stoll(s.substr(b, i - b));
  }
};

}  // namespace

std::vector<float> NpyArray::to_f32() const { return convert<float>(*this); }
std::vector<double> NpyArray::to_f64() const { return convert<double>(*this); }
std::vector<int64_t> NpyArray::to_i64() const { return convert<int64_t>(*this); }

NpyArray parse_npy(const uint8_t* b, size_t size, const std::string& where) {
  static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(b, magic, 6) != 0) throw Error(where + ": not a .npy file (bad magic)");
  const int major = b[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = size_t(b[8]) | (size_t(b[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw Error(where + ": truncated .npy header");
    hlen = size_t(b[8]) | (size_t(b[9]) << 8) | (size_t(b[10]) << 16) | (size_t(b[11]) << 24);
    hstart = 12;
  } else {
    throw Error(where + ": unsupported .npy version " + std::to_string(major));
  }
  if (hstart + hlen > size) throw Error(where + ": truncated .npy header");
  std::string h(reinterpret_cast<const char*>(b + hstart), hlen);
  while (!h.empty() && (h.back() == '\n' || h.back() == ' ' || h.back() == '\0')) h.pop_back();

  HeaderParser p{h, where};
  NpyArray a;
  bool have_descr = false, have_order = false, have_shape = false;
  p.expect('{');
  while (!p.eat('}')) {
    std::string key = p.str();
    p.expect(':');
    if (key == "descr") {
      std::string d = p.str();
      const NpyType all[] = {NpyType::f32, NpyType::f64, NpyType::i32, NpyType::i64, NpyType::u8, NpyType::u16};
      bool ok = false;
      for (NpyType t : all)
        if (d == npy_descr(t) || (npy_type_size(t) == 1 && d == "<u1")) { a.type = t; ok = true; }
      if (!ok) throw Error(where + ": unsupported .npy dtype '" + d + "'");
      have_descr = true;
    } else if (key == "fortran_order") {
      p.ws();
      if (h.compare(p.i, 5, "False") == 0) p.i += 5;
      else if (h.compare(p.i, 4, "True") == 0) throw Error(where + ": Fortran-order .npy arrays are not supported");
      else p.fail("fortran_order must be True or False");
      have_order = true;
    } else if (key == "shape") {
      p.expect('(');
      while (!p.eat(')')) {
        a.shape.push_back(p.integer());
        if (!p.eat(',')) { p.expect(')'); break; }
      }
      have_shape = true;
    } else {
      p.fail("unexpected key '" + key + "'");
    }
    if (!p.eat(',')) { p.expect('}'); break; }
  }
  if (!have_descr || !have_order || !have_shape) p.fail("missing descr, fortran_order or shape");
  const size_t data_start = hstart + hlen;
  int64_t n = 1;
  for (int64_t d : a.shape) {
    if (d < 0 || (d > 0 && n > (int64_t(1) << 40) / d)) throw Error(where + ": .npy shape too large");
    n *= d;
  }
  const size_t nbytes = size_t(n) * size_t(npy_type_size(a.type));
  if (size - data_start != nbytes)
    throw Error(where + ": .npy data is " + std::to_string(size - data_start) + " bytes, shape needs " + std::to_string(nbytes));
  a.data.assign(b + data_start, b + size);
  return a;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(bytes.data(), bytes.size(), path);
}

void write_npy(const std::string& path, NpyType type, const std::vector<int64_t>& shape, const void* data) {
  std::string h = std::string("{'descr': '") + npy_descr(type) + "', 'fortran_order': False, 'shape': (";
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    h += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) h += ", ";
    n *= shape[i];
  }
  if (shape.size() == 1) h.pop_back();
  h += "), }";
  const size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  if (h.size() > 65535) throw Error(path + ": .npy header too long");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error(path + ": cannot create");
  uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(h.size() & 0xFF), uint8_t(h.size() >> 8)};
  const size_t nbytes = size_t(n) * size_t(npy_type_size(type));
  bool ok = std::fwrite(pre, 1, 10, f) == 10 && std::fwrite(h.data(), 1, h.size(), f) == h.size() &&
            (nbytes == 0 || std::fwrite(data, 1, nbytes, f) == nbytes);
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) throw Error(path + ": write failed");
}

}  // namespace strata
