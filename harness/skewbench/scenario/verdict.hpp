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

#include "common/vocabulary.hpp"

namespace skewbench::scenario {

enum class Verdict { Safe, Conflict, Held, Error };

inline constexpr auto kVerdicts = vocabulary<Verdict>(
    {{Verdict::Safe, "SAFE"}, {Verdict::Conflict, "CONFLICT"}, {Verdict::Held, "HELD"}, {Verdict::Error, "ERROR"}});
inline constexpr auto kAllVerdicts = kVerdicts.values();

constexpr std::string_view to_string(Verdict verdict) { return kVerdicts.name(verdict); }

// nullopt for a word that is not a verdict.
constexpr std::optional<Verdict> verdict_from_string(std::string_view word) { return kVerdicts.parse(word); }

// Every verdict's word, for messages: "SAFE, CONFLICT, HELD or ERROR".
inline std::string verdict_words() { return kVerdicts.listed(); }

// In JSON, the word.
inline void to_json(nlohmann::json& out, Verdict verdict) { out = std::string(to_string(verdict)); }

}  // namespace skewbench::scenario
