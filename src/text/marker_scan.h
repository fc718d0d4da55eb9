// Finding special markers in text that arrives in pieces: a marker split across two pieces
// must be recognised, and the text before a possible marker start can be released early.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <string_view>

namespace strata {

struct MarkerHit {
  size_t pos;     // where the marker (or the possible start of one) begins; text.size() if none
  int which;      // index into the marker list; -1 when no complete marker was found
  bool partial;   // text from pos on is a proper prefix of a marker: wait for more input
  size_t len;     // length of the complete marker found
};

// Scans left to right from `from`. At each position a complete marker wins; otherwise, unless
// `at_end`, a tail of text that could still grow into a marker stops the scan. Markers must not
// be prefixes of one another.
MarkerHit scan_markers(std::string_view text, size_t from, std::initializer_list<std::string_view> markers,
                       bool at_end);

}  // namespace strata
