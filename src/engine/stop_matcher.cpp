#include "engine/stop_matcher.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace strata {

namespace {

// Length of an incomplete UTF-8 sequence at the end of s (0 if it ends on a boundary or with
// bytes that are not valid UTF-8 anyway, which are passed through rather than held forever).
size_t incomplete_utf8_tail(std::string_view s) {
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    unsigned char c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const auto& s : stops_)
    if (s.empty()) throw Error("stop strings must not be empty");
}

size_t StopMatcher::hold_length() const {
  // Longest proper prefix of any stop string that is a suffix of the held text.
  size_t hold = 0;
  for (const auto& s : stops_) {
    for (size_t k = std::min(s.size() - 1, held_.size()); k > hold; --k) {
      if (std::string_view(held_).substr(held_.size() - k) == std::string_view(s).substr(0, k)) {
        hold = k;
        break;
      }
    }
  }
  return std::max(hold, incomplete_utf8_tail(held_));
}

StopMatcher::Result StopMatcher::feed(std::string_view delta) {
  Result r;
  if (stopped_) {
    r.stopped = true;
    return r;
  }
  held_.append(delta);
  // The held text before this delta contained no complete stop string, so any match ends in
  // the delta; the first occurrence of each string is its earliest-ending one.
  size_t best_end = std::string::npos, best_start = 0;
  for (size_t i = 0; i < stops_.size(); ++i) {
    size_t pos = held_.find(stops_[i]);
    if (pos == std::string::npos) continue;
    size_t end = pos + stops_[i].size();
    if (end < best_end || (end == best_end && pos < best_start)) {
      best_end = end;
      best_start = pos;
      r.stop_index = int(i);
    }
  }
  if (r.stop_index >= 0) {
    r.emit = held_.substr(0, best_start);
    r.stopped = stopped_ = true;
    held_.clear();
    return r;
  }
  size_t keep = hold_length();
  r.emit = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return r;
}

std::string StopMatcher::flush() {
  std::string out;
  if (!stopped_) out.swap(held_);
  held_.clear();
  return out;
}

nlohmann::json StopMatcher::to_json() const {
  return {{"stop", stops_}, {"held", held_}, {"stopped", stopped_}};
}

StopMatcher StopMatcher::from_json(const nlohmann::json& j) {
  try {
    StopMatcher m(j.at("stop").get<std::vector<std::string>>());
    m.held_ = j.at("held").get<std::string>();
    m.stopped_ = j.at("stopped").get<bool>();
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("stop matcher state: ") + e.what());
  }
}

std::vector<uint8_t> StopMatcher::to_bytes() const { return nlohmann::json::to_cbor(to_json()); }

StopMatcher StopMatcher::from_bytes(std::span<const uint8_t> bytes) {
  nlohmann::json j;
  try {
    j = nlohmann::json::from_cbor(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("stop strings state: ") + e.what());
  }
  return from_json(j);
}

}  // namespace strata
