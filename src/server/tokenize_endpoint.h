// POST /tokenize and POST /detokenize in llama.cpp's server shapes:
//   /tokenize   {"content": str, "add_special": bool = false, "with_pieces": bool = false}
//               -> {"tokens": [id, ...]}, or with pieces {"tokens": [{"id": id, "piece": p}, ...]}
//                  where p is the token's text, or its bytes as an array of integers when they
//                  are not valid UTF-8 on their own (part of a character).
//   /detokenize {"tokens": [id, ...]} -> {"content": str}  (special tokens as their text)
// Special tokens written in the content are recognized ("parse_special" true, llama.cpp's
// default; false is a 400). Bad input throws ApiError (400); ids outside the vocabulary are
// 400s with code invalid_token_id.
#pragma once
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace strata::server {

nlohmann::ordered_json tokenize_response(std::string_view body, const ModelInfo& model);
nlohmann::ordered_json detokenize_response(std::string_view body, const ModelInfo& model);

}  // namespace strata::server
