// Unit tests of the tokenizer's parts: added-token flags, BOS/EOS, streaming decode, errors
// for unknown ids and bad tokenizer.json files, split behaviors, the JavaScript-compatible
// regex rewriting, UTF-8 repair and NFC.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "text/byte_level.h"
#include "text/pretokenizer.h"
#include "text/regex.h"
#include "text/tokenizer.h"
#include "text/unicode_nfc.h"
#include "text/utf8.h"

using namespace strata;
using nlohmann::json;

namespace {

std::string shared(const char* name) { return std::string(STRATA_SHARED_DIR) + "/tokenizers/" + name; }

const Tokenizer& qwen() {
  static const Tokenizer t = Tokenizer::load(shared("qwen3"));
  return t;
}
const Tokenizer& deepseek() {
  static const Tokenizer t = Tokenizer::load(shared("deepseek-v3"));
  return t;
}

// A tiny byte-level BPE: ids 0..255 are the bytes, then a few merges spelling "hello".
json tiny_json() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_encode(std::string(1, static_cast<char>(b)))] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  vocab["hello"] = 259;
  json j;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"h e", "l l", "he ll", "hell o"})}};
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         json::array({{{"type", "Split"},
                                       {"pattern", {{"Regex", R"( ?\p{L}+| ?[^\s\p{L}]+|\s+)"}}},
                                       {"behavior", "Isolated"},
                                       {"invert", false}},
                                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
  j["decoder"] = {{"type", "ByteLevel"}};
  j["added_tokens"] = json::array();
  return j;
}

json added(int id, const std::string& content, bool special, json flags = json::object()) {
  json a = {{"id", id}, {"content", content}, {"special", special}, {"lstrip", false}, {"rstrip", false},
            {"normalized", false}, {"single_word", false}};
  for (auto& [k, v] : flags.items()) a[k] = v;
  return a;
}

int32_t byte_id(unsigned char b) { return b; }

std::vector<int32_t> bytes_of(const std::string& s) {
  std::vector<int32_t> v;
  for (unsigned char c : s) v.push_back(byte_id(c));
  return v;
}

std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> v;
  for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

Tokenizer tiny(json j, json config = json::object()) { return Tokenizer::from_json(j.dump(), config.dump()); }

void expect_error(const std::string& tokenizer_json, const std::string& needle) {
  try {
    Tokenizer::from_json(tokenizer_json);
    ADD_FAILURE() << "no error; expected one mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(TinyBpe, MergesByRank) {
  Tokenizer t = tiny(tiny_json());
  EXPECT_EQ(t.encode("hello"), (std::vector<int32_t>{259}));
  EXPECT_EQ(t.encode("hell"), (std::vector<int32_t>{258}));
  EXPECT_EQ(t.encode("helo"), (std::vector<int32_t>{256, 'l', 'o'}));
  EXPECT_EQ(t.decode(t.encode("hello hello")), "hello hello");
}

TEST(AddedTokens, MatchedBeforePreTokenization) {
  json j = tiny_json();
  j["added_tokens"].push_back(added(300, "<s>", true));
  j["added_tokens"].push_back(added(301, "<s>x", true));  // longest match wins
  Tokenizer t = tiny(j);
  EXPECT_EQ(t.encode("a<s>b"), cat({bytes_of("a"), {300}, bytes_of("b")}));
  EXPECT_EQ(t.encode("a<s>xb"), cat({bytes_of("a"), {301}, bytes_of("b")}));
  EXPECT_EQ(t.encode("<s"), bytes_of("<s"));
  EXPECT_EQ(t.decode(t.encode("a<s>b")), "a<s>b");
  EXPECT_EQ(t.decode(t.encode("a<s>b"), /*skip_special=*/true), "ab");
}

TEST(AddedTokens, LstripAndRstripAbsorbWhiteSpace) {
  json j = tiny_json();
  j["added_tokens"].push_back(added(300, "[L]", false, {{"lstrip", true}}));
  j["added_tokens"].push_back(added(301, "[R]", false, {{"rstrip", true}}));
  Tokenizer t = tiny(j);
  EXPECT_EQ(t.encode("a  [L] b"), cat({bytes_of("a"), {300}, bytes_of(" b")}));
  EXPECT_EQ(t.encode("a [R]  b"), cat({bytes_of("a "), {301}, bytes_of("b")}));
  EXPECT_EQ(t.encode("a\t\n[L]"), cat({bytes_of("a"), {300}}));
  // Without the flags the white space stays text.
  json k = tiny_json();
  k["added_tokens"].push_back(added(300, "[L]", false));
  EXPECT_EQ(tiny(k).encode("a [L] b"), cat({bytes_of("a "), {300}, bytes_of(" b")}));
}

TEST(AddedTokens, SingleWordOnlyMatchesAWholeWord) {
  json j = tiny_json();
  j["added_tokens"].push_back(added(300, "cat", false, {{"single_word", true}}));
  Tokenizer t = tiny(j);
  EXPECT_EQ(t.encode("cat"), (std::vector<int32_t>{300}));
  EXPECT_EQ(t.encode("a cat!"), cat({bytes_of("a "), {300}, bytes_of("!")}));
  EXPECT_EQ(t.encode("concat"), bytes_of("concat"));
  EXPECT_EQ(t.encode("cats"), bytes_of("cats"));
  EXPECT_EQ(t.encode("_cat"), bytes_of("_cat"));
  EXPECT_EQ(t.encode("écat"), bytes_of("écat"));
}

TEST(AddedTokens, NormalizedTokensMatchNormalizedText) {
  json j = tiny_json();
  j["normalizer"] = {{"type", "NFC"}};
  j["added_tokens"].push_back(added(300, "caf\u00e9", false, {{"normalized", true}}));
  j["added_tokens"].push_back(added(301, "ni\u00f1o", false, {{"normalized", false}}));
  Tokenizer t = tiny(j);
  // Decomposed input is NFC-composed before normalized tokens are searched...
  EXPECT_EQ(t.encode("cafe\u0301"), (std::vector<int32_t>{300}));
  EXPECT_EQ(t.encode("caf\u00e9"), (std::vector<int32_t>{300}));
  // ...while non-normalized tokens only match the raw text.
  EXPECT_EQ(t.encode("ni\u00f1o"), (std::vector<int32_t>{301}));
  EXPECT_EQ(t.encode("nin\u0303o"), bytes_of("ni\u00f1o"));
}

TEST(AddedTokens, SpecialFlagDrivesSkipSpecial) {
  json j = tiny_json();
  j["added_tokens"].push_back(added(300, "<sp>", true));
  j["added_tokens"].push_back(added(301, "<plain>", false));
  Tokenizer t = tiny(j);
  auto ids = t.encode("x<sp>y<plain>z");
  EXPECT_EQ(t.decode(ids, true), "xy<plain>z");
  EXPECT_EQ(t.decode(ids, false), "x<sp>y<plain>z");
  EXPECT_TRUE(t.is_special(300));
  EXPECT_FALSE(t.is_special(301));
}

TEST(SpecialIds, BosEosFromTokenizerConfig) {
  json j = tiny_json();
  j["added_tokens"].push_back(added(300, "<bos>", true));
  j["added_tokens"].push_back(added(301, "<eos>", true));
  json cfg = {{"bos_token", {{"__type", "AddedToken"}, {"content", "<bos>"}}},
              {"eos_token", "<eos>"},
              {"add_bos_token", true},
              {"add_eos_token", true}};
  Tokenizer t = tiny(j, cfg);
  EXPECT_EQ(t.bos_id(), 300);
  EXPECT_EQ(t.eos_id(), 301);
  EXPECT_EQ(t.encode("hello", true), (std::vector<int32_t>{300, 259, 301}));
  EXPECT_EQ(t.encode("hello", false), (std::vector<int32_t>{259}));
}

TEST(SpecialIds, RealCheckpoints) {
  EXPECT_EQ(deepseek().bos_id(), 0);
  EXPECT_EQ(deepseek().eos_id(), 1);
  EXPECT_TRUE(deepseek().add_bos());
  EXPECT_EQ(deepseek().vocab_size(), 128815);
  EXPECT_EQ(deepseek().encode("Hello world", true), (std::vector<int32_t>{0, 19923, 2058}));
  EXPECT_EQ(qwen().bos_id(), -1);
  EXPECT_EQ(qwen().eos_id(), 151645);
  EXPECT_EQ(qwen().vocab_size(), 151669);
  EXPECT_EQ(qwen().encode("Hello world", true), (std::vector<int32_t>{9707, 1879}));
  EXPECT_EQ(qwen().token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(qwen().id_to_token(151644), "<|im_start|>");
  EXPECT_EQ(qwen().id_to_token(9707), "Hello");
  EXPECT_EQ(qwen().token_to_id("no such token"), std::nullopt);
  EXPECT_EQ(deepseek().token_to_id("<｜User｜>"), 128803);
}

TEST(Decode, OutOfVocabularyIdsAreErrors) {
  for (int32_t bad : {-1, 151669, 1 << 30}) {
    int32_t ids[] = {9707, bad};
    try {
      qwen().decode(ids);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
    }
  }
  // DeepSeek-V4's embedding has 129,280 rows, more than the tokenizer's ids.
  int32_t beyond[] = {129000};
  EXPECT_THROW(deepseek().decode(beyond), Error);
  EXPECT_THROW(qwen().id_to_token(200000), Error);
  StreamDecoder sd(qwen());
  EXPECT_THROW(sd.push(-5), Error);
}

TEST(StreamDecoder, EmojiByteByByte) {
  const std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600
  StreamDecoder sd(qwen());
  std::string out;
  for (size_t i = 0; i < emoji.size(); ++i) {
    auto id = qwen().token_to_id(byte_level_encode(emoji.substr(i, 1)));
    ASSERT_TRUE(id);
    std::string piece = sd.push(*id);
    if (i + 1 < emoji.size()) {
      EXPECT_EQ(piece, "") << "byte " << i;
    }
    out += piece;
  }
  EXPECT_EQ(out, emoji);
  EXPECT_EQ(sd.flush(), "");
}

TEST(StreamDecoder, CjkAndMixedTextNeverSplitACharacter) {
  for (const Tokenizer* t : {&qwen(), &deepseek()}) {
    const std::string text = "你好，世界！🧑🏽‍💻 emoji 👨‍👩‍👧‍👦 と カタカナ 한국어 ok";
    // Token by token.
    StreamDecoder sd(*t);
    std::string out;
    for (int32_t id : t->encode(text)) {
      std::string piece = sd.push(id);
      EXPECT_TRUE(utf8_valid(piece));
      out += piece;
    }
    out += sd.flush();
    EXPECT_EQ(out, text);
    // Byte by byte through the single-byte tokens.
    StreamDecoder bytes(*t);
    std::string out2;
    for (unsigned char c : text) {
      std::string piece = bytes.push(*t->token_to_id(byte_level_encode(std::string(1, static_cast<char>(c)))));
      EXPECT_TRUE(utf8_valid(piece));
      EXPECT_FALSE(piece.find("\xEF\xBF\xBD") != std::string::npos);
      out2 += piece;
    }
    EXPECT_EQ(out2 + bytes.flush(), text);
  }
}

TEST(StreamDecoder, InvalidAndUnfinishedBytesBecomeReplacementCharacters) {
  auto id = [](const char* b) { return *qwen().token_to_id(byte_level_encode(b)); };
  StreamDecoder sd(qwen());
  EXPECT_EQ(sd.push(id("\xF0")), "");
  EXPECT_EQ(sd.push(id("\x9F")), "");
  EXPECT_EQ(sd.push(id("a")), "\xEF\xBF\xBD" "a");  // F0 9F cut short by 'a'
  EXPECT_EQ(sd.push(id("\xE4")), "");
  EXPECT_EQ(sd.flush(), "\xEF\xBF\xBD");  // unfinished at the end
  EXPECT_EQ(sd.push(id("\x80")), "\xEF\xBF\xBD");  // a stray continuation byte
  // The same bytes through decode() give the same text.
  int32_t ids[] = {id("\xF0"), id("\x9F"), id("a"), id("\xE4")};
  EXPECT_EQ(qwen().decode(ids), "\xEF\xBF\xBD" "a" "\xEF\xBF\xBD");
}

TEST(BadTokenizerJson, ClearErrors) {
  json j = tiny_json();
  j.erase("model");
  expect_error(j.dump(), "missing \"model\"");

  j = tiny_json();
  j["pre_tokenizer"]["pretokenizers"][0]["type"] = "Whitespacey";
  expect_error(j.dump(), "unsupported pre-tokenizer type \"Whitespacey\"");

  j = tiny_json();
  j["model"]["type"] = "WordPiece";
  expect_error(j.dump(), "model type \"WordPiece\"");

  j = tiny_json();
  j["normalizer"] = {{"type", "Lowercasey"}};
  expect_error(j.dump(), "unsupported normalizer type \"Lowercasey\"");

  j = tiny_json();
  j["model"]["merges"].push_back("x nope");
  expect_error(j.dump(), "\"nope\", which is not in the vocab");

  j = tiny_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  expect_error(j.dump(), "regex does not compile");

  j = tiny_json();
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways";
  expect_error(j.dump(), "unknown Split behavior \"Sideways\"");

  j = tiny_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Removed"}};
  expect_error(j.dump(), "no ByteLevel step");

  expect_error("{\"model\": ", "not valid JSON");
  EXPECT_THROW(Tokenizer::load("/nonexistent/dir"), Error);
}

namespace {

// A tiny SentencePiece-style BPE (Gemma's layout): " " -> "▁", no pre-tokenizer split, byte
// tokens <0x00>..<0xFF> for characters the vocab lacks.
json sp_json() {
  json vocab = json::object();
  vocab["<unk>"] = 0;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 1 + b;
  }
  int id = 257;
  for (const char* t : {"\u2581", "h", "i", "\u2581h", "\u2581hi", "\u00e9", "\u2581\u2581"}) vocab[json::parse(std::string("\"") + t + "\"").get<std::string>()] = id++;
  json j;
  j["model"] = {{"type", "BPE"},        {"vocab", vocab},   {"unk_token", "<unk>"},
                {"byte_fallback", true}, {"fuse_unk", true}, {"merges", json::array({json::array({"\u2581", "h"}),
                                                                                     json::array({"\u2581h", "i"}),
                                                                                     json::array({"\u2581", "\u2581"})})}};
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                            {{"type", "ByteFallback"}},
                                            {{"type", "Fuse"}}})}};
  j["added_tokens"] = json::array({added(264, "<start>", true)});
  return j;
}

}  // namespace

TEST(SentencePieceBpe, MarkersMergesAndByteFallback) {
  Tokenizer t = tiny(sp_json());
  // " hi" -> "▁hi" (merged); in "▁▁h", ("▁", "h") outranks ("▁", "▁"); "é" is a vocab
  // character; "€" (E2 82 AC) falls back to its bytes.
  EXPECT_EQ(t.encode(" hi"), (std::vector<int32_t>{261}));
  EXPECT_EQ(t.encode("  h\u00e9\u20ac"), (std::vector<int32_t>{257, 260, 262, 1 + 0xE2, 1 + 0x82, 1 + 0xAC}));
  EXPECT_EQ(t.encode("  "), (std::vector<int32_t>{263}));
  EXPECT_EQ(t.decode(t.encode("  h\u00e9\u20ac hi")), "  h\u00e9\u20ac hi");
  EXPECT_EQ(t.normalize("a b"), "a b");  // decode(encode(s)): the marker becomes a space again
  EXPECT_EQ(t.decode(std::vector<int32_t>{264, 261}), "<start> hi");
  EXPECT_EQ(t.token_bytes(1 + 0xE2), "\xe2");
}

TEST(SentencePieceBpe, UnknownCharactersWithoutByteTokensFuse) {
  json j = sp_json();
  j["model"]["vocab"].erase("<0xE2>");  // "€€" can no longer fall back: two unknowns, fused into one
  Tokenizer t = tiny(j);
  EXPECT_EQ(t.encode("h\u20ac\u20ach"), (std::vector<int32_t>{258, 0, 258}));
  j["model"]["fuse_unk"] = false;
  EXPECT_EQ(tiny(j).encode("h\u20ac\u20ach"), (std::vector<int32_t>{258, 0, 0, 258}));
}

TEST(SentencePieceBpe, ClearErrors) {
  json j = sp_json();
  j["decoder"]["decoders"].erase(1);
  expect_error(j.dump(), "unsupported decoder");
  j = sp_json();
  j["decoder"] = {{"type", "ByteLevel"}};
  expect_error(j.dump(), "byte_fallback needs a SentencePiece-style decoder");
  j = sp_json();
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  expect_error(j.dump(), "ByteLevel pre-tokenizer with a SentencePiece-style decoder");
  j = sp_json();
  j["normalizer"]["pattern"] = {{"Regex", " +"}};
  expect_error(j.dump(), "only a String pattern");
  j = sp_json();
  j["normalizer"] = {{"type", "Prepend"}};
  expect_error(j.dump(), "Prepend normalizer has no string \"prepend\"");
}

TEST(SentencePieceBpe, PrependNormalizer) {
  json j = sp_json();
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "\u2581"}}, j["normalizer"]})}};
  Tokenizer t = tiny(j);
  EXPECT_EQ(t.encode("hi"), (std::vector<int32_t>{261}));
  EXPECT_TRUE(t.encode("").empty());
}

TEST(Split, AllBehaviors) {
  const std::string text = "The-final--countdown";
  Regex dash("-");
  auto run = [&](SplitBehavior b, bool invert = false) {
    auto v = split_pieces(text, dash.find_all(text), b, invert);
    return std::vector<std::string>(v.begin(), v.end());
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(run(SplitBehavior::Removed), (V{"The", "final", "countdown"}));
  EXPECT_EQ(run(SplitBehavior::Isolated), (V{"The", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(run(SplitBehavior::MergedWithPrevious), (V{"The-", "final-", "-", "countdown"}));
  EXPECT_EQ(run(SplitBehavior::MergedWithNext), (V{"The", "-final", "-", "-countdown"}));
  EXPECT_EQ(run(SplitBehavior::Contiguous), (V{"The", "-", "final", "--", "countdown"}));
  // invert: the words are the matches, so Removed keeps the dashes.
  EXPECT_EQ(run(SplitBehavior::Removed, true), (V{"-", "-", "-"}));
}

TEST(Split, StringPatternThroughTokenizer) {
  json j = tiny_json();
  j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Split"},
                                            {"pattern", {{"String", "."}}},
                                            {"behavior", "Removed"},
                                            {"invert", false}};
  Tokenizer t = tiny(j);
  // "." is a literal, not "any character": only the dots go.
  EXPECT_EQ(t.encode("hello.a.b"), (std::vector<int32_t>{259, 'a', 'b'}));
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "MergedWithNext";
  EXPECT_EQ(tiny(j).encode("a.hello"), (std::vector<int32_t>{'a', '.', 259}));
}

TEST(Regex, JavaScriptSemantics) {
  // \s is JavaScript's set: U+FEFF yes, U+0085 no.
  Regex ws(R"(\s+)");
  EXPECT_EQ(ws.find_all("a\xEF\xBB\xBF" "b").size(), 1u);
  EXPECT_EQ(ws.find_all("a\xC2\x85" "b").size(), 0u);
  // (?i:...) folds ASCII only: the long s does not match 's.
  Regex contraction(R"((?i:'s|'t))");
  EXPECT_EQ(contraction.find_all("it'S").size(), 1u);
  EXPECT_EQ(contraction.find_all("it'\xC5\xBF").size(), 0u);
  // \u escapes, and \d stays ASCII.
  EXPECT_EQ(Regex(R"(\u4e00+)").find_all("\xE4\xB8\x80\xE4\xB8\x80").size(), 1u);
  EXPECT_EQ(Regex(R"(\d)").find_all("\xD9\xA3").size(), 0u);  // Arabic-Indic three
  EXPECT_EQ(Regex(R"(\p{N})").find_all("\xD9\xA3").size(), 1u);
  // Empty matches are skipped one character at a time.
  auto m = Regex("x*").find_all("axxb\xE4\xB8\x80x");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0], (std::pair<size_t, size_t>{1, 3}));
  EXPECT_EQ(m[1], (std::pair<size_t, size_t>{7, 8}));
}

TEST(Utf8, ReplacesMaximalIllFormedSubparts) {
  EXPECT_EQ(utf8_sanitize("ok"), "ok");
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(utf8_sanitize("a\x80" "b"), "a" + r + "b");
  EXPECT_EQ(utf8_sanitize("\xF0\x9F\x98" "a"), r + "a");       // one subpart
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80"), r + r + r);          // surrogate: three
  EXPECT_EQ(utf8_sanitize("\xC0\xAF"), r + r);                  // overlong
  EXPECT_EQ(utf8_sanitize("\xF4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(utf8_incomplete_tail("ab\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8_incomplete_tail("ab\xE4\xBD"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("ab\xE4\xBD\xA0"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("ab\x80"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("ab\xED\xA0"), 0u);  // already invalid, nothing to wait for
}

TEST(Nfc, ComposesAndReorders) {
  EXPECT_EQ(nfc("cafe\u0301"), "caf\u00e9");
  EXPECT_EQ(nfc("caf\u00e9"), "caf\u00e9");
  EXPECT_EQ(nfc("\u212b"), "\u00c5");                      // singleton
  EXPECT_EQ(nfc("a\u0302\u0323"), "\u1ead");               // reordered, then composed
  EXPECT_EQ(nfc("\u1100\u1161\u11a8"), "\uac01");          // Hangul L V T
  EXPECT_EQ(nfc("a\u0301\u0301"), "\u00e1\u0301");         // second accent is blocked
  EXPECT_EQ(nfc("\u0958"), "\u0915\u093c");                // composition exclusion
  EXPECT_EQ(nfc("\u00e9\u0327"), "\u0229\u0301");          // é + cedilla: ȩ́
}

TEST(Concurrency, EncodeFromSeveralThreadsAgrees) {
  // The per-word cache is shared: threads must get the same ids as a single thread.
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i)
    texts.push_back("thread " + std::to_string(i * 7919) + " 你好 wörld émoji 😀 <|im_end|> word" + std::to_string(i));
  std::vector<std::vector<int32_t>> expect;
  for (const auto& t : texts) expect.push_back(qwen().encode(t));
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 20; ++rep)
        for (size_t i = 0; i < texts.size(); ++i)
          if (qwen().encode(texts[i]) != expect[i]) ++bad[k];
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad, (std::vector<int>(4, 0)));
}
