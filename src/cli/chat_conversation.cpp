#include "cli/chat_conversation.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace strata::cli {

void save_conversation(const std::string& path, const nlohmann::ordered_json& messages) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(path + ": cannot write: " + std::strerror(errno));
  f << messages.dump(2) << "\n";
  f.close();
  if (!f) throw Error(path + ": cannot write: " + std::strerror(errno));
}

nlohmann::ordered_json load_conversation(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read: " + std::strerror(errno));
  std::stringstream text;
  text << f.rdbuf();
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's message starts with "[json.exception.parse_error.101] "; keep what follows.
    std::string what = e.what();
    if (const size_t end = what.find("] "); what.starts_with("[json.exception") && end != std::string::npos)
      what.erase(0, end + 2);
    throw Error(path + ": not JSON: " + what);
  }
  if (!j.is_array()) throw Error(path + ": not a messages array (expected [{\"role\": ..., \"content\": ...}, ...])");
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    const std::string where = path + ": message " + std::to_string(i);
    if (!m.is_object()) throw Error(where + " is not an object");
    if (!m.contains("role") || !m["role"].is_string()) throw Error(where + " has no string \"role\"");
    const std::string role = m["role"];
    if (role != "system" && role != "user" && role != "assistant")
      throw Error(where + " has role \"" + role + "\" (expected system, user or assistant)");
    if (!m.contains("content") || !m["content"].is_string()) throw Error(where + " has no string \"content\"");
    if (m.contains("reasoning_content") && !m["reasoning_content"].is_string())
      throw Error(where + ": \"reasoning_content\" is not a string");
  }
  return j;
}

}  // namespace strata::cli
