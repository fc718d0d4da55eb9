// Unicode Normalization Form C (canonical decomposition, then canonical composition), for
// tokenizers whose normalizer is NFC (Qwen3). Tables come from scripts/gen_unicode_nfc.py.
#pragma once
#include <string>
#include <string_view>

namespace strata {

// NFC of valid UTF-8 text. Text that is already NFC (the common case) is returned as is
// after a quick scan.
std::string nfc(std::string_view text);
// The Unicode version of the NFC tables.
const char* nfc_unicode_version();

}  // namespace strata
