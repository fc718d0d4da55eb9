#include "text/unicode_nfc.h"

#include <algorithm>
#include <vector>

#include "text/unicode_nfc_data.h"
#include "text/utf8.h"

namespace strata {
namespace {

using namespace unicode_data;

// Hangul syllables are composed and decomposed arithmetically (Unicode chapter 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint8_t ccc_slow(char32_t cp) {
  auto it = std::upper_bound(kCccRanges, kCccRanges + kCccRangeCount, cp,
                             [](char32_t c, const CccRange& r) { return c < r.first; });
  if (it == kCccRanges) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

uint8_t ccc_of(char32_t cp) {
  static const std::vector<uint8_t> bmp = [] {
    std::vector<uint8_t> t(0x10000, 0);
    for (size_t r = 0; r < kCccRangeCount && kCccRanges[r].first < 0x10000; ++r)
      for (char32_t c = kCccRanges[r].first; c <= kCccRanges[r].last && c < 0x10000; ++c) t[c] = kCccRanges[r].ccc;
    return t;
  }();
  return cp < 0x10000 ? bmp[cp] : ccc_slow(cp);
}

bool unstable_slow(char32_t cp) {
  auto it = std::upper_bound(kNfcUnstable, kNfcUnstable + kNfcUnstableCount, cp,
                             [](char32_t c, const CpRange& r) { return c < r.first; });
  return it != kNfcUnstable && cp <= (it - 1)->last;
}

// A bitmap of the Basic Multilingual Plane, where nearly all text lives, so the quick scan
// costs one lookup per character.
bool unstable(char32_t cp) {
  static const std::vector<uint64_t> bmp = [] {
    std::vector<uint64_t> bits(0x10000 / 64, 0);
    for (char32_t c = 0; c < 0x10000; ++c)
      if (unstable_slow(c)) bits[c / 64] |= uint64_t{1} << (c % 64);
    return bits;
  }();
  if (cp < 0x10000) return (bmp[cp / 64] >> (cp % 64)) & 1;
  return unstable_slow(cp);
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  auto it = std::lower_bound(kDecompositions, kDecompositions + kDecompositionCount, cp,
                             [](const Decomposition& d, char32_t c) { return d.cp < c; });
  if (it != kDecompositions + kDecompositionCount && it->cp == cp) {
    out.insert(out.end(), kDecompositionPool + it->offset, kDecompositionPool + it->offset + it->length);
  } else {
    out.push_back(cp);
  }
}

// The primary composite of (a, b), or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  auto it = std::lower_bound(kCompositions, kCompositions + kCompositionCount, std::pair{a, b},
                             [](const Composition& c, std::pair<char32_t, char32_t> k) {
                               return c.first != k.first ? c.first < k.first : c.second < k.second;
                             });
  if (it != kCompositions + kCompositionCount && it->first == a && it->second == b) return it->composite;
  return 0;
}

// Full NFC of a segment that starts at a normalization boundary.
void nfc_segment(std::string_view text, std::string& s) {
  std::vector<char32_t> d;
  d.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    Utf8Char c = utf8_next(text, i);
    decompose(c.cp, d);
    i += c.len;
  }
  // Canonical ordering: a stable sort of every run of non-starters by combining class.
  for (size_t i = 0; i < d.size();) {
    if (ccc_of(d[i]) == 0) { ++i; continue; }
    size_t j = i;
    while (j < d.size() && ccc_of(d[j]) != 0) ++j;
    std::stable_sort(d.begin() + i, d.begin() + j,
                     [](char32_t a, char32_t b) { return ccc_of(a) < ccc_of(b); });
    i = j;
  }
  // Canonical composition: a character joins the last starter unless something between them
  // blocks it (a starter, or a non-starter of the same or higher class).
  std::vector<char32_t> out;
  out.reserve(d.size());
  long starter = -1;
  int last_ccc = -1;  // class of the last character kept after the starter; -1: none
  for (char32_t cp : d) {
    int cc = ccc_of(cp);
    if (starter >= 0 && (last_ccc == -1 || (last_ccc != 0 && last_ccc < cc))) {
      if (char32_t comp = compose(out[starter], cp)) {
        out[starter] = comp;
        continue;
      }
    }
    if (cc == 0) {
      starter = static_cast<long>(out.size());
      last_ccc = -1;
    } else {
      last_ccc = cc;
    }
    out.push_back(cp);
  }
  for (char32_t cp : out) utf8_append(s, cp);
}

}  // namespace

const char* nfc_unicode_version() { return kNfcUnicodeVersion; }

std::string nfc(std::string_view text) {
  // A stable character (class 0, unchanged by NFC, never composing with what precedes it)
  // is a normalization boundary: only the stretches from the last stable character before
  // an unstable one up to the next stable character need the full algorithm.
  std::string out;
  size_t copied = 0;      // text[0, copied) is in out
  size_t last_stable = 0; // start of the last stable character seen (or `copied`)
  bool changed = false;
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) { last_stable = i++; continue; }
    Utf8Char c = utf8_next(text, i);
    if (!unstable(c.cp)) { last_stable = i; i += c.len; continue; }
    size_t j = i + c.len;
    while (j < text.size()) {
      Utf8Char n = utf8_next(text, j);
      if (!unstable(n.cp)) break;
      j += n.len;
    }
    size_t seg = std::max(last_stable, copied);
    if (!changed) { out.reserve(text.size() + 16); changed = true; }
    out.append(text.substr(copied, seg - copied));
    nfc_segment(text.substr(seg, j - seg), out);
    copied = last_stable = i = j;
  }
  if (!changed) return std::string(text);
  out.append(text.substr(copied));
  return out;
}

}  // namespace strata
