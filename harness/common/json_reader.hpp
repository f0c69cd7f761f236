#pragma once

// Strict reading of JSON input files (scenarios, grids). Every error names the
// JSON path of the offending value, and an object read through ObjectReader
// must have no keys left unread: a misspelt key is an error, never ignored.

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace skewbench {

// An input file that does not match its format. Maps to exit code 2.
class InputError : public std::runtime_error {
 public:
  InputError(std::string json_path, std::string message)
      : std::runtime_error(json_path + ": " + message),
        json_path_(std::move(json_path)),
        message_(std::move(message)) {}

  const std::string& json_path() const { return json_path_; }
  const std::string& message() const { return message_; }

 private:
  std::string json_path_;
  std::string message_;
};

// A short name for the JSON type of a value, as used in error messages.
std::string_view json_type_name(const nlohmann::json& value);

// How deeply arrays and objects may nest in an input file.
inline constexpr std::size_t kMaxJsonDepth = 64;
// The largest JSON text either parser reads (a run's whole evidence file
// included). An answer from a service is held to --max-answer-bytes before it
// gets here.
inline constexpr std::size_t kMaxJsonBytes = 64 * 1024 * 1024;

// Whether a file may hold comments (// to the end of the line, /* ... */), as
// a file a user writes from a commented template does (target.json).
enum class JsonComments { refused, allowed };

// Parses text as JSON; a syntax error becomes an InputError at "$" that says
// where (byte offset) the text stopped making sense, and so does nesting
// deeper than kMaxJsonDepth or a text longer than kMaxJsonBytes.
nlohmann::json parse_json_text(std::string_view text, JsonComments comments = JsonComments::refused);

// JSON that skewbench did not write itself, or that a user may have edited:
// an evidence file, a cells.jsonl line, a remote's answer. Parsed as
// nlohmann::json::parse does, after a scan that refuses nesting deeper than
// kMaxJsonDepth (a std::runtime_error saying so), since copying or printing a
// deeper value would overflow the stack, and a text longer than kMaxJsonBytes.
nlohmann::json parse_bounded_json(std::string_view text);

// The value at RFC 6901 `pointer` in the untrusted JSON `text` (parsed by
// parse_bounded_json); nullopt when the text is not JSON skewbench reads, the
// pointer is malformed, or nothing is there.
std::optional<nlohmann::json> value_at_pointer(std::string_view text, const std::string& pointer);

class ObjectReader {
 public:
  // Throws InputError unless `value` is an object.
  ObjectReader(const nlohmann::json& value, std::string path);

  const std::string& path() const { return path_; }
  std::string child_path(std::string_view key) const { return path_ + "." + std::string(key); }
  bool has(std::string_view key) const;

  const nlohmann::json& require(std::string_view key);
  std::int64_t require_int(std::string_view key);
  std::string require_string(std::string_view key);
  bool require_bool(std::string_view key);
  const nlohmann::json& require_object(std::string_view key);
  const nlohmann::json& require_array(std::string_view key);

  // An integer in [min, max]; else an InputError that gives the range.
  std::int64_t require_int_within(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_int(std::string_view key);
  std::optional<std::int64_t> optional_int_within(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<std::string> optional_string(std::string_view key);
  std::optional<bool> optional_bool(std::string_view key);
  const nlohmann::json* optional(std::string_view key);

  // Marks a key as understood without reading it here (someone else reads it).
  void claim(std::string_view key);

  // Throws InputError naming the first key nobody read.
  void finish() const;

 private:
  const nlohmann::json& value_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
};

// Type checks for values that are not object members.
std::int64_t expect_int(const nlohmann::json& value, const std::string& path);
std::int64_t expect_int_within(const nlohmann::json& value, const std::string& path, std::int64_t min,
                               std::int64_t max);
std::string expect_string(const nlohmann::json& value, const std::string& path);

std::string index_path(const std::string& path, std::size_t index);

}  // namespace skewbench
