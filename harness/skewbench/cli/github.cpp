#include "cli/github.hpp"

#include <cstdlib>
#include <fstream>
#include <iostream>

namespace skewbench::cli {
namespace {

// A workflow command's message: %, CR and LF are escaped.
std::string escape_data(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '%') {
      out += "%25";
    } else if (c == '\r') {
      out += "%0D";
    } else if (c == '\n') {
      out += "%0A";
    } else {
      out += c;
    }
  }
  return out;
}

// A property value: the message's escapes, and ':' and ',' as well.
std::string escape_property(const std::string& text) {
  std::string out;
  for (const char c : escape_data(text)) {
    if (c == ':') {
      out += "%3A";
    } else if (c == ',') {
      out += "%2C";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

bool github_actions(bool forced) {
  const char* value = std::getenv("GITHUB_ACTIONS");
  return forced || (value != nullptr && std::string(value) == "true");
}

std::string github_error(const std::optional<std::string>& file, const std::optional<int>& line,
                         const std::string& title, const std::string& message) {
  std::string properties;
  const auto add = [&](const std::string& name, const std::string& value) {
    properties += (properties.empty() ? " " : ",") + name + "=" + escape_property(value);
  };
  if (file) add("file", *file);
  if (file && line) add("line", std::to_string(*line));
  add("title", title);
  return "::error" + properties + "::" + escape_data(message);
}

bool append_step_summary(const std::string& markdown) {
  const char* path = std::getenv("GITHUB_STEP_SUMMARY");
  if (path == nullptr || *path == '\0') return true;
  std::ofstream out(path, std::ios::app);
  out << markdown;
  if (!markdown.empty() && markdown.back() != '\n') out << "\n";
  out.flush();
  if (!out) {
    std::cerr << "skewbench: cannot append to GITHUB_STEP_SUMMARY " << path << "\n";
    return false;
  }
  return true;
}

}  // namespace skewbench::cli
