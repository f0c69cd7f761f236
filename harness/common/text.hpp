#pragma once

// Tiny text helpers shared by every table the driver prints or writes.

#include <cctype>
#include <cstdint>
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

// `s` without the spaces, tabs and carriage returns at either end.
inline std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
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
