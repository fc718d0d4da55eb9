// /tokenize and /detokenize bodies (llama.cpp's shapes) against the DeepSeek-V3 tokenizer.
#include "server/tokenize_endpoint.h"

#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/test_model.h"
#include "text/utf8.h"

namespace strata::server {
namespace {

using test::model_info;
using test::tokenizer;
using ojson = nlohmann::ordered_json;

ApiError error_of(ojson (*fn)(std::string_view, const ModelInfo&), const std::string& body) {
  try {
    fn(body, model_info());
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "");
}

TEST(TokenizeEndpoint, TokensAndPieces) {
  const std::string text = "Hello world";
  const auto ids = tokenizer().encode(text);
  ojson plain = tokenize_response(R"({"content":"Hello world"})", model_info());
  EXPECT_EQ(plain, ojson({{"tokens", ids}}));
  ojson special = tokenize_response(R"({"content":"Hello world","add_special":true})", model_info());
  EXPECT_EQ(special["tokens"], ojson(tokenizer().encode(text, true)));
  EXPECT_GT(special["tokens"].size(), ids.size());  // BOS
  ojson pieces = tokenize_response(R"({"content":"Hello world","with_pieces":true})", model_info());
  ASSERT_EQ(pieces["tokens"].size(), ids.size());
  std::string joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(pieces["tokens"][i]["id"], ids[i]);
    joined += pieces["tokens"][i]["piece"].get<std::string>();
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(tokenize_response(R"({"content":""})", model_info()), ojson({{"tokens", ojson::array()}}));
}

TEST(TokenizeEndpoint, PartialCharactersAreBytes) {
  // Rare characters are split into byte-level tokens that are not UTF-8 on their own.
  const std::string text = "\xF0\x9F\xA6\x99\xF0\xA0\x80\x80\xE4\xB8\xB3";  // 🦙𠀀丳
  ojson j = tokenize_response(ojson({{"content", text}, {"with_pieces", true}}).dump(), model_info());
  std::string bytes;
  bool split = false;
  for (const auto& t : j["tokens"]) {
    const auto& piece = t["piece"];
    if (piece.is_array()) {
      split = true;
      for (const auto& b : piece) bytes += char(b.get<int>());
    } else {
      bytes += piece.get<std::string>();
    }
    EXPECT_EQ(piece.is_string(), utf8_valid(tokenizer().token_bytes(t["id"].get<int32_t>())));
  }
  EXPECT_TRUE(split) << j.dump();
  EXPECT_EQ(bytes, text);
}

TEST(TokenizeEndpoint, Detokenize) {
  const auto ids = tokenizer().encode("Hello world", true);
  ojson j = detokenize_response(ojson({{"tokens", ids}}).dump(), model_info());
  EXPECT_EQ(j, ojson({{"content", tokenizer().decode(ids)}}));  // BOS as its text
  EXPECT_EQ(detokenize_response(R"({"tokens":[]})", model_info()), ojson({{"content", ""}}));
}

TEST(TokenizeEndpoint, BadInput) {
  EXPECT_EQ(error_of(tokenize_response, "{").status, 400);
  EXPECT_EQ(error_of(tokenize_response, "{}").param, "content");
  EXPECT_EQ(error_of(tokenize_response, R"({"content":5})").param, "content");
  EXPECT_EQ(error_of(tokenize_response, R"({"content":"x","with_pieces":"yes"})").param, "with_pieces");
  EXPECT_EQ(error_of(tokenize_response, R"({"content":"x","add_special":1})").param, "add_special");
  EXPECT_EQ(error_of(tokenize_response, R"({"content":"x","parse_special":false})").code, "unsupported_value");
  EXPECT_EQ(error_of(detokenize_response, "{}").param, "tokens");
  EXPECT_EQ(error_of(detokenize_response, R"({"tokens":"1 2"})").param, "tokens");
  EXPECT_EQ(error_of(detokenize_response, R"({"tokens":[1,"2"]})").param, "tokens");
  for (const std::string& id : {std::string("-1"), std::to_string(tokenizer().vocab_size()), std::string("99999999999")}) {
    ApiError e = error_of(detokenize_response, R"({"tokens":[1,)" + id + "]}");
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "tokens");
    EXPECT_EQ(e.code, "invalid_token_id");
  }
}

}  // namespace
}  // namespace strata::server
