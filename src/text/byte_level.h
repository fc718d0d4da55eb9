// The GPT-2 byte-to-unicode mapping of byte-level BPE: every byte is shown as a printable
// character (printable Latin-1 bytes as themselves, the rest as U+0100 upwards), so vocab
// and merges in tokenizer.json are written in these characters.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace strata {

// The character that stands for byte b.
char32_t byte_to_unicode(unsigned char b);
// The byte a character stands for, if it is one of the 256.
std::optional<unsigned char> unicode_to_byte(char32_t cp);
// Raw bytes of a vocab token written in mapped characters; nullopt if some character is not
// a mapped byte (such tokens, e.g. special tokens stored in the vocab, decode as themselves).
std::optional<std::string> byte_level_decode(std::string_view token);
// The mapped form of raw bytes (what tokenizer.json writes for them).
std::string byte_level_encode(std::string_view bytes);

}  // namespace strata
