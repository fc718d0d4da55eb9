#include "text/pretokenizer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/regex.h"

namespace strata {

std::vector<std::string_view> split_pieces(std::string_view text,
                                           const std::vector<std::pair<size_t, size_t>>& matches,
                                           SplitBehavior behavior, bool invert) {
  std::vector<std::string_view> pieces;
  split_pieces(text, matches, behavior, invert, pieces);
  return pieces;
}

void split_pieces(std::string_view text, const std::vector<std::pair<size_t, size_t>>& matches,
                  SplitBehavior behavior, bool invert, std::vector<std::string_view>& pieces) {
  if (behavior == SplitBehavior::Isolated) {
    // Every span is its own piece (the common case, done without building spans).
    size_t prev = 0;
    for (auto [s, e] : matches) {
      if (s > prev) pieces.push_back(text.substr(prev, s - prev));
      if (e > s) pieces.push_back(text.substr(s, e - s));
      prev = e;
    }
    if (prev < text.size()) pieces.push_back(text.substr(prev));
    return;
  }
  // Spans covering the whole text, each marked as delimiter or not.
  struct Span { size_t b, e; bool delim; };
  std::vector<Span> spans;
  spans.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (auto [s, e] : matches) {
    if (s > prev) spans.push_back({prev, s, invert});
    spans.push_back({s, e, !invert});
    prev = e;
  }
  if (prev < text.size()) spans.push_back({prev, text.size(), invert});

  std::vector<Span> out;
  out.reserve(spans.size());
  switch (behavior) {
    case SplitBehavior::Isolated:  // returned above
      break;
    case SplitBehavior::Removed:
      for (const Span& s : spans) if (!s.delim) out.push_back(s);
      break;
    case SplitBehavior::MergedWithPrevious: {
      bool prev_delim = false;
      for (const Span& s : spans) {
        if (s.delim && !prev_delim && !out.empty()) out.back().e = s.e;
        else out.push_back(s);
        prev_delim = s.delim;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool next_delim = false;  // walking backwards: whether the span after was a delimiter
      for (size_t i = spans.size(); i-- > 0;) {
        const Span& s = spans[i];
        if (s.delim && !next_delim && !out.empty()) out.back().b = s.b;
        else out.push_back(s);
        next_delim = s.delim;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
    case SplitBehavior::Contiguous: {
      bool have_prev = false, prev_d = false;
      for (const Span& s : spans) {
        if (have_prev && s.delim && prev_d) out.back().e = s.e;
        else out.push_back(s);
        have_prev = true;
        prev_d = s.delim;
      }
      break;
    }
  }
  for (const Span& s : out) if (s.e > s.b) pieces.push_back(text.substr(s.b, s.e - s.b));
}

namespace {

std::string escape_literal(std::string_view s) {
  std::string out;
  for (char c : s) {
    bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 static_cast<unsigned char>(c) >= 0x80;
    if (!alnum) out += '\\';
    out += c;
  }
  return out;
}

SplitBehavior parse_behavior(const std::string& b) {
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  throw Error("tokenizer.json: unknown Split behavior \"" + b + "\"");
}

class SplitStep final : public PreTokenizerStep {
 public:
  explicit SplitStep(const nlohmann::json& j)
      : regex_(pattern_of(j)),
        behavior_(parse_behavior(j.value("behavior", std::string("Isolated")))),
        invert_(j.value("invert", false)) {}

  void apply(std::vector<std::string_view>& pieces, std::deque<std::string>&) const override {
    // Scratch buffers reused across calls: this runs once per piece of every text.
    thread_local std::vector<std::pair<size_t, size_t>> matches;
    thread_local std::vector<std::string_view> out;
    out.clear();
    for (std::string_view p : pieces) {
      matches.clear();
      regex_.find_all(p, matches);
      split_pieces(p, matches, behavior_, invert_, out);
    }
    pieces.swap(out);
  }

 private:
  static std::string pattern_of(const nlohmann::json& j) {
    if (!j.contains("pattern") || !j["pattern"].is_object())
      throw Error("tokenizer.json: Split pre-tokenizer has no \"pattern\"");
    const auto& p = j["pattern"];
    if (p.contains("Regex") && p["Regex"].is_string()) return p["Regex"].get<std::string>();
    if (p.contains("String") && p["String"].is_string()) return escape_literal(p["String"].get<std::string>());
    throw Error("tokenizer.json: Split pattern is neither Regex nor String");
  }

  Regex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

// ByteLevel only prepares pieces here: the byte-to-character mapping itself is implicit,
// since BPE works on raw bytes (see bpe.h).
class ByteLevelStep final : public PreTokenizerStep {
 public:
  explicit ByteLevelStep(const nlohmann::json& j)
      : add_prefix_space_(j.value("add_prefix_space", true)), use_regex_(j.value("use_regex", true)) {
    // The GPT-2 pattern that ByteLevel applies when use_regex is set.
    if (use_regex_)
      regex_ = std::make_unique<Regex>(
          R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  }

  void apply(std::vector<std::string_view>& pieces, std::deque<std::string>& arena) const override {
    if (add_prefix_space_) {
      for (auto& p : pieces) {
        if (!p.empty() && p[0] == ' ') continue;
        std::string& s = arena.emplace_back(1, ' ');
        s.append(p);
        p = s;
      }
    }
    if (!use_regex_) return;
    std::vector<std::string_view> out;
    std::vector<std::pair<size_t, size_t>> matches;
    for (std::string_view p : pieces) {
      matches.clear();
      regex_->find_all(p, matches);
      split_pieces(p, matches, SplitBehavior::Isolated, false, out);
    }
    pieces.swap(out);
  }

 private:
  bool add_prefix_space_, use_regex_;
  std::unique_ptr<Regex> regex_;
};

std::string type_of(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw Error("tokenizer.json: pre_tokenizer entry has no \"type\"");
  return j["type"].get<std::string>();
}

}  // namespace

PreTokenizer::PreTokenizer(const nlohmann::json& j, bool byte_level) {
  if (j.is_null()) {
    if (byte_level) throw Error("tokenizer.json: pre_tokenizer is null; byte-level BPE needs a ByteLevel step");
    return;
  }
  std::vector<const nlohmann::json*> entries;
  if (type_of(j) == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
      throw Error("tokenizer.json: Sequence pre_tokenizer has no \"pretokenizers\" array");
    for (const auto& e : j["pretokenizers"]) entries.push_back(&e);
  } else {
    entries.push_back(&j);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string type = type_of(*entries[i]);
    if (type == "Split") {
      steps_.push_back(std::make_unique<SplitStep>(*entries[i]));
    } else if (type == "ByteLevel") {
      if (!byte_level) throw Error("tokenizer.json: a ByteLevel pre-tokenizer with a SentencePiece-style decoder");
      if (i + 1 != entries.size())
        throw Error("tokenizer.json: ByteLevel must be the last pre-tokenizer step");
      steps_.push_back(std::make_unique<ByteLevelStep>(*entries[i]));
    } else {
      throw Error("tokenizer.json: unsupported pre-tokenizer type \"" + type + "\"");
    }
  }
  if (byte_level && (entries.empty() || type_of(*entries.back()) != "ByteLevel"))
    throw Error("tokenizer.json: pre_tokenizer has no ByteLevel step; only byte-level BPE is supported");
}

PreTokenizer::~PreTokenizer() = default;

std::vector<std::string_view> PreTokenizer::split(std::string_view text, std::deque<std::string>& arena) const {
  std::vector<std::string_view> pieces{text};
  for (const auto& s : steps_) s->apply(pieces, arena);
  return pieces;
}

}  // namespace strata
