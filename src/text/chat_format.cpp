#include "text/chat_format.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error(p.string() + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::ordered_json read_json(const fs::path& p) {
  const std::string text = read_text(p);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(p.string() + ": not valid JSON: " + e.what());
  }
}

// A special token as tokenizer_config.json writes it: a string, or an AddedToken object.
nlohmann::ordered_json token_text(const nlohmann::ordered_json& t) {
  if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"];
  return t;
}

std::string template_source(const fs::path& dir, const nlohmann::ordered_json& config) {
  if (fs::exists(dir / "chat_template.jinja")) return read_text(dir / "chat_template.jinja");
  if (auto it = config.find("chat_template"); it != config.end() && !it->is_null()) {
    if (it->is_string()) return it->get<std::string>();
    if (it->is_array()) {
      for (const auto& t : *it)
        if (t.is_object() && t.value("name", "") == "default" && t.contains("template") && t["template"].is_string())
          return t["template"].get<std::string>();
      throw Error((dir / "tokenizer_config.json").string() + ": \"chat_template\" lists templates but none named \"default\"");
    }
    throw Error((dir / "tokenizer_config.json").string() + ": \"chat_template\" must be a string or a list of {name, template}");
  }
  if (fs::exists(dir / "chat_template.json")) {
    const auto j = read_json(dir / "chat_template.json");
    if (j.contains("chat_template") && j["chat_template"].is_string()) return j["chat_template"].get<std::string>();
  }
  throw Error(dir.string() + ": the model has no chat template (no chat_template.jinja, and tokenizer_config.json has "
                             "no \"chat_template\")");
}

}  // namespace

std::string model_type_of(const std::string& model_dir) {
  const fs::path p = fs::path(model_dir) / "config.json";
  if (!fs::exists(p)) return "";
  const auto j = read_json(p);
  return j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
}

std::unique_ptr<ChatFormat> load_chat_format(const std::string& model_dir, const std::string& model_type) {
  if (model_type == "deepseek_v4") return deepseek_v4_chat_format();
  if (model_type == "deepseek_v32") return deepseek_v32_chat_format();
  const fs::path dir(model_dir);
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  if (fs::exists(dir / "tokenizer_config.json")) config = read_json(dir / "tokenizer_config.json");
  const std::string source = template_source(dir, config);
  // The special tokens transformers passes to every template (its special_tokens_map).
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  for (const char* k : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"})
    if (auto it = config.find(k); it != config.end() && !it->is_null()) vars[k] = token_text(*it);
  if (auto it = config.find("additional_special_tokens"); it != config.end() && it->is_array()) {
    nlohmann::ordered_json extra = nlohmann::ordered_json::array();
    for (const auto& t : *it) extra.push_back(token_text(t));
    vars["additional_special_tokens"] = extra;
  }
  const std::string end_marker = vars.contains("eos_token") && vars["eos_token"].is_string() ? vars["eos_token"].get<std::string>() : "";
  try {
    return jinja_chat_format(source, std::move(vars), end_marker);
  } catch (const Error& e) {
    throw Error(dir.string() + ": chat template: " + e.what());
  }
}

}  // namespace strata
