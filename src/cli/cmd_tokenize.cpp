// `strata tokenize`: ids of a text as a JSON array, or (--decode) the text of ids.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"
#include "text/tokenizer.h"

namespace strata::cli {
namespace {

std::vector<int32_t> parse_ids(const std::string& list) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < INT32_MIN || v > INT32_MAX)
      throw Error("--decode: \"" + item + "\" is not a token id");
    ids.push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return ids;
}

AutoRegister reg([](CLI::App& app) {
  struct Opts {
    std::string model, text, decode;
    bool add_special = false, skip_special = false;
  };
  auto opts = std::make_shared<Opts>();
  auto* c = app.add_subcommand("tokenize", "encode text to token ids (JSON array), or decode ids to text");
  c->add_option("--model", opts->model, "checkpoint directory with tokenizer.json")->required();
  auto* text = c->add_option("--text", opts->text, "text to encode");
  auto* dec = c->add_option("--decode", opts->decode, "comma-separated ids to decode, e.g. 1,2,3");
  text->excludes(dec);
  c->add_flag("--add-special", opts->add_special, "add BOS/EOS as tokenizer_config.json asks");
  c->add_flag("--skip-special", opts->skip_special, "leave special tokens out of decoded text");
  c->callback([opts, text, dec] {
    if (!*text && !*dec) throw Error("tokenize: give --text or --decode");
    Tokenizer tok = Tokenizer::load(opts->model);
    if (*dec) {
      std::string s = tok.decode(parse_ids(opts->decode), opts->skip_special);
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fputc('\n', stdout);
      return;
    }
    std::string out = "[";
    for (int32_t id : tok.encode(opts->text, opts->add_special)) {
      if (out.size() > 1) out += ',';
      out += std::to_string(id);
    }
    out += "]\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
});

}  // namespace
}  // namespace strata::cli
