#include "common/json_reader.hpp"

#include <set>
#include <vector>

namespace skewbench {

std::string_view json_type_name(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "object";
    case nlohmann::json::value_t::array:
      return "array";
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "integer";
    case nlohmann::json::value_t::number_float:
      return "number";
    default:
      return "unknown";
  }
}

namespace {

// True when arrays and objects nest deeper than kMaxJsonDepth in `text`,
// found by a scan that skips strings (and comments, when they are allowed):
// copying or printing such a value would recurse once per level and overflow
// the stack, so it is refused unparsed.
bool nests_too_deep(std::string_view text, JsonComments comments) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (comments == JsonComments::allowed && !in_string && c == '/' && i + 1 < text.size()) {
      const bool line = text[i + 1] == '/';
      if (line || text[i + 1] == '*') {
        const auto end = text.find(line ? "\n" : "*/", i + 2);
        if (end == std::string_view::npos) break;  // the parser says what is wrong
        i = end + (line ? 0 : 1);
        continue;
      }
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

std::string too_large_message(std::size_t bytes) {
  return std::to_string(bytes) + " bytes of JSON, more than the " + std::to_string(kMaxJsonBytes) + " skewbench reads";
}

std::string too_deep_message() {
  return "nested deeper than " + std::to_string(kMaxJsonDepth) + " arrays and objects; no skewbench input needs more";
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, JsonComments comments) {
  if (text.size() > kMaxJsonBytes) throw InputError("$", too_large_message(text.size()));
  if (nests_too_deep(text, comments)) throw InputError("$", too_deep_message());
  // nlohmann keeps the last of two equal keys; a strict reader refuses them.
  std::vector<std::set<std::string>> keys_of_open_objects;
  std::string duplicate;
  const nlohmann::json::parser_callback_t reject_duplicates = [&](int, nlohmann::json::parse_event_t event,
                                                                  nlohmann::json& parsed) {
    using event_t = nlohmann::json::parse_event_t;
    if (event == event_t::object_start) {
      keys_of_open_objects.emplace_back();
    } else if (event == event_t::object_end && !keys_of_open_objects.empty()) {
      keys_of_open_objects.pop_back();
    } else if (event == event_t::key && !keys_of_open_objects.empty()) {
      if (!keys_of_open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
    }
    return true;
  };
  nlohmann::json out;
  try {
    out = nlohmann::json::parse(text.begin(), text.end(), reject_duplicates, /*allow_exceptions=*/true,
                                /*ignore_comments=*/comments == JsonComments::allowed);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError("$", "not valid JSON (byte " + std::to_string(e.byte) + ")");
  }
  if (!duplicate.empty()) throw InputError("$", "key \"" + duplicate + "\" appears twice in one object");
  return out;
}

nlohmann::json parse_bounded_json(std::string_view text) {
  if (text.size() > kMaxJsonBytes) throw std::runtime_error(too_large_message(text.size()));
  if (nests_too_deep(text, JsonComments::refused)) throw std::runtime_error(too_deep_message());
  return nlohmann::json::parse(text.begin(), text.end());
}

namespace {

InputError type_error(const std::string& path, std::string_view expected, const nlohmann::json& got) {
  return InputError(path, "expected " + std::string(expected) + ", got " + std::string(json_type_name(got)));
}

bool is_int(const nlohmann::json& v) {
  if (v.is_number_integer()) return true;
  return false;
}

}  // namespace

std::int64_t expect_int(const nlohmann::json& value, const std::string& path) {
  if (!is_int(value)) throw type_error(path, "an integer", value);
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    throw InputError(path, "integer out of range");
  }
  return value.get<std::int64_t>();
}

std::int64_t expect_int_within(const nlohmann::json& value, const std::string& path, std::int64_t min,
                               std::int64_t max) {
  const auto v = expect_int(value, path);
  if (v < min || v > max) {
    throw InputError(path, std::to_string(v) + " is out of range: must lie within [" + std::to_string(min) + ", " +
                               std::to_string(max) + "]");
  }
  return v;
}

std::string expect_string(const nlohmann::json& value, const std::string& path) {
  if (!value.is_string()) throw type_error(path, "a string", value);
  return value.get<std::string>();
}

std::string index_path(const std::string& path, std::size_t index) { return path + "[" + std::to_string(index) + "]"; }

ObjectReader::ObjectReader(const nlohmann::json& value, std::string path) : value_(value), path_(std::move(path)) {
  if (!value_.is_object()) throw type_error(path_, "an object", value_);
}

bool ObjectReader::has(std::string_view key) const { return value_.contains(key); }

const nlohmann::json& ObjectReader::require(std::string_view key) {
  const auto it = value_.find(key);
  if (it == value_.end()) throw InputError(child_path(key), "required field is missing");
  read_.emplace(key);
  return *it;
}

std::int64_t ObjectReader::require_int(std::string_view key) { return expect_int(require(key), child_path(key)); }

std::int64_t ObjectReader::require_int_within(std::string_view key, std::int64_t min, std::int64_t max) {
  return expect_int_within(require(key), child_path(key), min, max);
}

std::optional<std::int64_t> ObjectReader::optional_int_within(std::string_view key, std::int64_t min,
                                                              std::int64_t max) {
  if (const auto* v = optional(key)) return expect_int_within(*v, child_path(key), min, max);
  return std::nullopt;
}

std::string ObjectReader::require_string(std::string_view key) { return expect_string(require(key), child_path(key)); }

bool ObjectReader::require_bool(std::string_view key) {
  const auto& v = require(key);
  if (!v.is_boolean()) throw type_error(child_path(key), "a boolean", v);
  return v.get<bool>();
}

const nlohmann::json& ObjectReader::require_object(std::string_view key) {
  const auto& v = require(key);
  if (!v.is_object()) throw type_error(child_path(key), "an object", v);
  return v;
}

const nlohmann::json& ObjectReader::require_array(std::string_view key) {
  const auto& v = require(key);
  if (!v.is_array()) throw type_error(child_path(key), "an array", v);
  return v;
}

const nlohmann::json* ObjectReader::optional(std::string_view key) {
  const auto it = value_.find(key);
  if (it == value_.end()) return nullptr;
  read_.emplace(key);
  return &*it;
}

std::optional<std::int64_t> ObjectReader::optional_int(std::string_view key) {
  if (const auto* v = optional(key)) return expect_int(*v, child_path(key));
  return std::nullopt;
}

std::optional<std::string> ObjectReader::optional_string(std::string_view key) {
  if (const auto* v = optional(key)) return expect_string(*v, child_path(key));
  return std::nullopt;
}

std::optional<bool> ObjectReader::optional_bool(std::string_view key) {
  if (const auto* v = optional(key)) {
    if (!v->is_boolean()) throw type_error(child_path(key), "a boolean", *v);
    return v->get<bool>();
  }
  return std::nullopt;
}

void ObjectReader::claim(std::string_view key) { read_.emplace(key); }

void ObjectReader::finish() const {
  for (const auto& [key, _] : value_.items()) {
    if (!read_.contains(key)) throw InputError(child_path(key), "unknown field");
  }
}

std::optional<nlohmann::json> value_at_pointer(std::string_view text, const std::string& pointer) {
  try {
    const auto document = parse_bounded_json(text);
    const nlohmann::json::json_pointer at(pointer);
    if (!document.contains(at)) return std::nullopt;
    return document.at(at);
  } catch (const std::exception&) {
    return std::nullopt;  // not JSON, too deep, or a malformed pointer
  }
}

}  // namespace skewbench
