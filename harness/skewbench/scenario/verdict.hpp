#pragma once

// A scenario's or a cell's verdict, computed from what was measured: SAFE (one
// effect, delivered), CONFLICT (two or more effects), HELD (recovery refused
// or escalated), ERROR (the harness could not measure). A scenario file may
// expect one (all but ERROR); the runner reaches one. Written in evidence as
// the upper-case words below; this is the one place that spells them.

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace skewbench::scenario {

enum class Verdict { Safe, Conflict, Held, Error };

inline constexpr std::array<Verdict, 4> kAllVerdicts = {Verdict::Safe, Verdict::Conflict, Verdict::Held,
                                                        Verdict::Error};

constexpr std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Safe:
      return "SAFE";
    case Verdict::Conflict:
      return "CONFLICT";
    case Verdict::Held:
      return "HELD";
    case Verdict::Error:
      return "ERROR";
  }
  return "ERROR";
}

// nullopt for a word that is not a verdict.
constexpr std::optional<Verdict> verdict_from_string(std::string_view word) {
  for (const auto verdict : kAllVerdicts) {
    if (to_string(verdict) == word) return verdict;
  }
  return std::nullopt;
}

// Every verdict's word, for messages: "SAFE, CONFLICT, HELD or ERROR".
inline std::string verdict_words() {
  std::string out;
  for (std::size_t i = 0; i < kAllVerdicts.size(); ++i) {
    if (i > 0) out += i + 1 == kAllVerdicts.size() ? " or " : ", ";
    out += to_string(kAllVerdicts[i]);
  }
  return out;
}

// In JSON, the word.
inline void to_json(nlohmann::json& out, Verdict verdict) { out = std::string(to_string(verdict)); }

}  // namespace skewbench::scenario
