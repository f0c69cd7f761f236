#pragma once

// Tiny text helpers shared by every table the driver prints or writes.

#include <cctype>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace skewbench::text {

// A JSON value as a table cell: `null_text` ("-" unless given) for null, a
// string without quotes, anything else as compact JSON.
inline std::string cell(const nlohmann::json& value, std::string_view null_text = "-") {
  if (value.is_null()) return std::string(null_text);
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

// `s` left-aligned in `width` columns; never cut.
inline std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// The parts with `separator` between them.
inline std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

// `text` as one word for /bin/sh: in single quotes, each ' written '\''.
inline std::string shell_quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `text` with each placeholder "{name}" that `values` holds replaced by its
// value (shell-quoted when `quote`), in one pass: what a value brings in is
// never read again. Other braces, and "${name}" (the shell's), stay as they
// are written.
inline std::string expand_placeholders(std::string_view text, const std::map<std::string, std::string>& values,
                                       bool quote) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto open = text.find('{', at);
    const auto close = open == std::string_view::npos ? open : text.find('}', open);
    if (close == std::string_view::npos) break;
    const auto name = std::string(text.substr(open, close - open + 1));
    const auto it = values.find(name);
    if (it == values.end() || (open > 0 && text[open - 1] == '$')) {
      out.append(text.substr(at, open + 1 - at));
      at = open + 1;
      continue;
    }
    out.append(text.substr(at, open - at));
    out += quote ? shell_quoted(it->second) : it->second;
    at = close + 1;
  }
  out.append(text.substr(at));
  return out;
}

// Whether `c` may be in a placeholder's name: a letter, a digit, '_' or '-'
// (the first a letter or '_'). Names skewbench fills in are lower-case; one
// spelled otherwise ({STORE_PORT}, {store-port}) is still read as a
// placeholder, so that it is refused as unknown instead of passed on as
// written.
inline bool placeholder_name_char(char c, bool first) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return first ? letter : letter || (c >= '0' && c <= '9') || c == '-';
}

// The placeholders "{name}" (placeholder_name_char) that `text` holds, in
// order, as written; "${name}" (the shell's) is not one, nor are braces
// around anything else (an awk program, {a,b}, {1..3}).
inline std::vector<std::string> placeholders_in(std::string_view text) {
  std::vector<std::string> out;
  for (auto open = text.find('{'); open != std::string_view::npos; open = text.find('{', open + 1)) {
    auto close = open + 1;
    while (close < text.size() && placeholder_name_char(text[close], close == open + 1)) ++close;
    if (close == open + 1 || close >= text.size() || text[close] != '}') continue;
    if (open > 0 && text[open - 1] == '$') continue;
    out.emplace_back(text.substr(open, close - open + 1));
  }
  return out;
}

// `s` without the spaces, tabs and carriage returns at either end.
inline std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// At most `max_bytes` of untrusted bytes (an answer's body) for a message:
// bytes that are not printable ASCII as \xNN, and what was left off counted.
inline std::string short_prefix(std::string_view bytes, std::size_t max_bytes = 200) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes.substr(0, max_bytes)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  if (bytes.size() > max_bytes) out += "... (" + std::to_string(bytes.size()) + " bytes in all)";
  return out;
}

// "1 job", "2 jobs": `word` with an "s" unless there is exactly one.
inline std::string plural(std::uint64_t count, const std::string& word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

// `s` as one line of Markdown that shows exactly `s`: each line break (with the
// indentation around it) becomes " / ", and every character Markdown could read
// as markup is backslash-escaped, so a multi-line error message cannot break a
// list item or a table row. An underscore inside a word is left alone: it is
// not emphasis there, and max_clock_error_s stays readable.
inline std::string markdown_escape(std::string_view s) {
  const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  std::string out;
  bool pending_break = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i] == '\t' ? ' ' : s[i];
    if (ch == '\n' || ch == '\r') {
      pending_break = true;
      continue;
    }
    if (pending_break && ch == ' ') continue;
    if (pending_break) {
      while (!out.empty() && out.back() == ' ') out.pop_back();
      if (!out.empty()) out += " / ";
      pending_break = false;
    }
    const bool inner_underscore = ch == '_' && i > 0 && i + 1 < s.size() && word_char(s[i - 1]) && word_char(s[i + 1]);
    if (std::string_view("\\`*_[]<|~&").find(ch) != std::string_view::npos && !inner_underscore) out += '\\';
    out += ch;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace skewbench::text
