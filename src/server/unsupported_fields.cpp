#include "server/unsupported_fields.h"

#include <string>

#include "server/api_error.h"
#include "server/json_field.h"

namespace strata::server {
namespace {

using ojson = nlohmann::ordered_json;


void check_best_of(const ojson& j, int n) {
  const ojson* v = field(j, "best_of");
  if (!v) return;
  if (!v->is_number_integer()) throw bad_request("'best_of' must be an integer.", "best_of");
  const int64_t b = v->get<int64_t>();
  if (b < n) throw bad_request("'best_of' must be at least 'n' (" + std::to_string(n) + ").", "best_of");
  if (b > n)
    throw unsupported_value("best_of",
                            "'best_of' greater than 'n' is not supported: strata does not rank extra "
                            "candidates. Ask for 'n' choices and choose among them yourself.");
}

void check_suffix(const ojson& j) {
  const ojson* v = field(j, "suffix");
  if (!v) return;
  if (!v->is_string()) throw bad_request("'suffix' must be a string.", "suffix");
  if (!v->get<std::string>().empty())
    throw unsupported_parameter("suffix", "'suffix' is not supported: strata does not do fill-in-the-middle "
                                          "insertion.");
}

}  // namespace

void check_unsupported_fields(const ojson& j, Endpoint ep, int n) {
  check_best_of(j, n);
  check_suffix(j);
  if (ep == Endpoint::chat) {
    if (const ojson* v = field(j, "echo")) {
      if (!v->is_boolean()) throw bad_request("'echo' must be a boolean.", "echo");
      if (v->get<bool>())
        throw unsupported_parameter("echo", "'echo' is not supported on chat completions; /v1/completions "
                                            "echoes the prompt.");
    }
  }
  for (const char* legacy : {"functions", "function_call"})
    if (field(j, legacy))
      throw unsupported_parameter(legacy, std::string("'") + legacy +
                                              "' (the deprecated function-calling API) is not supported; send "
                                              "'tools' and 'tool_choice'.");
  if (const ojson* v = field(j, "parallel_tool_calls")) {
    if (!v->is_boolean()) throw bad_request("'parallel_tool_calls' must be a boolean.", "parallel_tool_calls");
    if (!v->get<bool>())
      throw unsupported_value("parallel_tool_calls",
                              "'parallel_tool_calls': false cannot be enforced: strata does not constrain "
                              "decoding, so the model may call several tools at once.");
  }
  if (const ojson* v = field(j, "modalities")) {
    const bool text_only = v->is_array() && v->size() == 1 && (*v)[0] == "text";
    if (!text_only)
      throw unsupported_value("modalities", "Only the text modality is supported ('modalities': [\"text\"]).");
  }
  for (const char* p : {"audio", "prediction", "web_search_options"})
    if (field(j, p)) throw unsupported_parameter(p, std::string("'") + p + "' is not supported.");
}

}  // namespace strata::server
