// `strata chat`'s /save and /load: the conversation as the OpenAI-style messages array it keeps
// (role, content, and reasoning_content for a reply that reasoned), in a JSON file.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace strata::cli {

// Throws strata::Error (one line, naming the file) when the file cannot be written.
void save_conversation(const std::string& path, const nlohmann::ordered_json& messages);
// Throws strata::Error (one line, naming the file) for an unreadable file, malformed JSON, or
// anything but an array of messages with a known role and string content.
nlohmann::ordered_json load_conversation(const std::string& path);

}  // namespace strata::cli
