// GET /: a chat page for the served model in one self-contained HTML document (inline CSS and
// JS, no external request, works offline), compiled into the binary. It chats through
// /v1/chat/completions (streamed), shows /metrics as live stats and /v1/ledger as a chart of
// cache memory per request against context, with the conversation's context marked.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::server {

std::string_view web_chat_page();

// The page's response headers: a Content-Security-Policy that lets only its own inline script
// and style run and lets it connect to this server alone, and no sniffing, framing or referrer.
std::vector<std::pair<std::string, std::string>> web_chat_headers();

}  // namespace strata::server
