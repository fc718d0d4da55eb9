#include "models/checkpoint_files.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace strata::models {
namespace fs = std::filesystem;

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error(path + ": cannot write");
}

void copy_tokenizer_files(const std::string& from_dir, const std::string& to_dir) {
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
    const fs::path from = fs::path(from_dir) / name, to = fs::path(to_dir) / name;
    if (!fs::exists(from)) throw Error(from.string() + ": tokenizer file not found");
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error(from.string() + ": cannot copy to " + to.string() + ": " + ec.message());
    fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read,
                    fs::perm_options::replace, ec);
  }
}

}  // namespace strata::models
