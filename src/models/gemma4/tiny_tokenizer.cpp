#include "models/gemma4/tiny_tokenizer.h"

#include <cstdio>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/checkpoint_files.h"

namespace strata::gemma4 {

using nlohmann::ordered_json;

void write_tiny_tokenizer(const std::string& dir, int64_t vocab) {
  if (vocab < 512) throw Error("tiny tokenizer: needs 512 ids, the vocabulary has " + std::to_string(vocab));
  const std::string marker = "\u2581";
  ordered_json v = ordered_json::object();
  ordered_json added = ordered_json::array();
  int64_t id = 0;
  for (const char* s : {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"}) {
    added.push_back({{"id", id}, {"content", s}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                     {"normalized", false}, {"special", true}});
    v[s] = id++;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v[name] = id++;
  }
  v[marker] = id++;
  for (char ch = '!'; ch <= '~'; ++ch) v[std::string(1, ch)] = id++;
  // Merges up to the vocabulary's 512: "▁" + a letter, then common English letter pairs.
  ordered_json merges = ordered_json::array();
  auto merge = [&](const std::string& a, const std::string& b) {
    if (id >= 512 || v.contains(a + b)) return;
    merges.push_back(ordered_json::array({a, b}));
    v[a + b] = id++;
  };
  for (char ch = 'a'; ch <= 'z'; ++ch) merge(marker, std::string(1, ch));
  const char* pairs[] = {"th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es", "or", "te", "of",
                         "ed", "is", "it", "al", "ar", "st", "to", "nt", "ng", "se", "ha", "as", "ou", "io", "le",
                         "ve", "co", "me", "de", "hi", "ri", "ro", "ic", "ne", "ea", "ra", "ce", "li", "ch", "ll",
                         "be", "ma", "si", "om", "ur"};
  for (const char* p : pairs) merge(std::string(1, p[0]), std::string(1, p[1]));
  for (char a = 'a'; a <= 'z' && id < 512; ++a)
    for (char b = 'a'; b <= 'z' && id < 512; ++b) merge(std::string(1, a), std::string(1, b));
  ordered_json t;
  t["version"] = "1.0";
  t["added_tokens"] = added;
  t["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", marker}};
  t["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"},
                        {"invert", false}};
  t["decoder"] = {{"type", "Sequence"},
                  {"decoders", ordered_json::array({{{"type", "Replace"}, {"pattern", {{"String", marker}}}, {"content", " "}},
                                                    {{"type", "ByteFallback"}},
                                                    {{"type", "Fuse"}}})}};
  t["model"] = {{"type", "BPE"},         {"unk_token", "<unk>"}, {"fuse_unk", true},
                {"byte_fallback", true}, {"vocab", v},           {"merges", merges}};
  ordered_json cfg;
  cfg["bos_token"] = "<bos>";
  cfg["eos_token"] = "<end_of_turn>";
  cfg["pad_token"] = "<pad>";
  cfg["unk_token"] = "<unk>";
  cfg["add_bos_token"] = true;
  cfg["add_eos_token"] = false;
  // Gemma's turn format: <start_of_turn>role\n … <end_of_turn>\n, the assistant's role "model".
  cfg["chat_template"] =
      "{{ bos_token }}{% for m in messages %}{% set role = 'model' if m['role'] == 'assistant' else m['role'] %}"
      "{{ '<start_of_turn>' + role + '\\n' + (m['content'] | trim) + '<end_of_turn>\\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}";
  const std::filesystem::path d(dir);
  models::write_text_file((d / "tokenizer.json").string(), t.dump(1) + "\n");
  models::write_text_file((d / "tokenizer_config.json").string(), cfg.dump(1) + "\n");
}

}  // namespace strata::gemma4
