#include "cli/token_ids.h"

#include <cctype>

#include "core/error.h"

namespace strata::cli {

std::vector<int64_t> parse_token_ids(const std::string& s) {
  std::vector<int64_t> ids;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string tok = s.substr(i, j - i);
    while (!tok.empty() && std::isspace(static_cast<unsigned char>(tok.front()))) tok.erase(tok.begin());
    while (!tok.empty() && std::isspace(static_cast<unsigned char>(tok.back()))) tok.pop_back();
    if (tok.empty() || tok.size() > 18) throw Error("--ids: bad token id '" + tok + "' in '" + s + "'");
    for (char c : tok)
      if (!std::isdigit(static_cast<unsigned char>(c))) throw Error("--ids: bad token id '" + tok + "' in '" + s + "'");
    ids.push_back(std::stoll(tok));
    i = j + 1;
  }
  if (ids.empty()) throw Error("--ids: no token ids");
  return ids;
}

}  // namespace strata::cli
