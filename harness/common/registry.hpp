#pragma once

// Things registered once by name (replay policies, step kinds): a name taken
// twice is a programming error that fails loudly at start-up, and an unknown
// name can be answered with the list of known ones.

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/text.hpp"

namespace skewbench {

template <typename Entry>
class Registry {
 public:
  // `what` names one entry in errors, e.g. "policy" or "step kind".
  explicit Registry(std::string what) : what_(std::move(what)) {}

  // Throws std::logic_error when the name is already taken.
  void add(std::string name, Entry entry) {
    if (entries_.contains(name)) throw std::logic_error(what_ + " registered twice: " + name);
    entries_.emplace(std::move(name), std::move(entry));
  }

  // Null when no entry has this name.
  const Entry* find(std::string_view name) const {
    const auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }

  // The names in sorted order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, _] : entries_) out.push_back(name);
    return out;
  }

  // Every entry by name, in name order.
  const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }

  // "a, b, c": the names for an error message about an unknown one.
  std::string known_names() const { return text::join(names(), ", "); }

 private:
  std::string what_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace skewbench
