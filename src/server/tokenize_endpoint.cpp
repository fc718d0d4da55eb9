#include "server/tokenize_endpoint.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "server/api_error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace strata::server {
namespace {

using ojson = nlohmann::ordered_json;

bool get_bool(const ojson& j, const char* name, bool def) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_boolean()) throw bad_request(std::string("'") + name + "' must be a boolean.", name);
  return it->get<bool>();
}

}  // namespace

ojson tokenize_response(std::string_view body, const ModelInfo& m) {
  ojson j = parse_json_body(body);
  auto c = j.find("content");
  if (c == j.end() || c->is_null()) throw bad_request("'content' is a required property.", "content");
  if (!c->is_string()) throw bad_request("'content' must be a string.", "content");
  const bool add_special = get_bool(j, "add_special", false);
  const bool with_pieces = get_bool(j, "with_pieces", false);
  if (!get_bool(j, "parse_special", true))
    throw unsupported_value("parse_special", "'parse_special': false is not supported: special tokens written in "
                                             "the content are always recognized.");
  const std::vector<int32_t> ids = m.tokenizer->encode(c->get<std::string>(), add_special);
  ojson tokens = ojson::array();
  for (int32_t id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    const std::string piece = m.tokenizer->token_bytes(id);
    if (utf8_valid(piece)) {
      tokens.push_back({{"id", id}, {"piece", piece}});
    } else {
      ojson bytes = ojson::array();
      for (unsigned char b : piece) bytes.push_back(int(b));
      tokens.push_back({{"id", id}, {"piece", bytes}});
    }
  }
  return {{"tokens", tokens}};
}

ojson detokenize_response(std::string_view body, const ModelInfo& m) {
  ojson j = parse_json_body(body);
  auto t = j.find("tokens");
  if (t == j.end() || t->is_null()) throw bad_request("'tokens' is a required property.", "tokens");
  if (!t->is_array()) throw bad_request("'tokens' must be an array of token ids.", "tokens");
  std::vector<int32_t> ids;
  for (const auto& v : *t) {
    if (!v.is_number_integer()) throw bad_request("'tokens' must contain integers only.", "tokens");
    const int64_t id = v.get<int64_t>();
    if (id < 0 || id >= m.vocab_size)
      throw bad_request("Token id " + std::to_string(id) + " is out of vocabulary (valid ids are 0 to " +
                            std::to_string(m.vocab_size - 1) + ").",
                        "tokens", "invalid_token_id");
    ids.push_back(int32_t(id));
  }
  try {
    return {{"content", m.tokenizer->decode(ids)}};
  } catch (const Error& e) {  // an id the tokenizer has no entry for
    throw bad_request(e.what(), "tokens", "invalid_token_id");
  }
}

}  // namespace strata::server
