#include "report/markup.hpp"

#include <cmath>

#include "scenario/verdict.hpp"

namespace skewbench::report {

using scenario::Verdict;

const StateStyle& style_of(CellState state) {
  static constexpr StateStyle kNotRun{"not run", "", "", "",
                                      "no record in cells.jsonl (incomplete sweep or another shard)"};
  static constexpr StateStyle kSafe{to_string(Verdict::Safe), "#009E73", "#00291E", "S", "exactly one effect"};
  static constexpr StateStyle kConflict{to_string(Verdict::Conflict), "#D55E00", "#2B1300", "C",
                                        "two or more effects at the remote: the effect happened more than once"};
  static constexpr StateStyle kHeld{to_string(Verdict::Held), "#F0E442", "#3D3800", "H",
                                    "no duplicate; time refused (TIME_UNKNOWN), escalated, or effect unconfirmed"};
  static constexpr StateStyle kError{to_string(Verdict::Error), "#332288", "#FFFFFF", "E",
                                     "the harness failed; says nothing about safety"};
  switch (state) {
    case CellState::Safe:
      return kSafe;
    case CellState::Conflict:
      return kConflict;
    case CellState::Held:
      return kHeld;
    case CellState::Error:
      return kError;
    case CellState::NotRun:
      break;
  }
  return kNotRun;
}

bool state_from_verdict(std::string_view word, CellState& state) {
  const auto verdict = scenario::verdict_from_string(word);
  if (!verdict) return false;
  switch (*verdict) {
    case Verdict::Safe:
      state = CellState::Safe;
      break;
    case Verdict::Conflict:
      state = CellState::Conflict;
      break;
    case Verdict::Held:
      state = CellState::Held;
      break;
    case Verdict::Error:
      state = CellState::Error;
      break;
  }
  return true;
}

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

int text_width_px(std::string_view text, int font_px) {
  // Counts code points (UTF-8 continuation bytes do not start one) at an
  // average advance of 0.62 em, a little wider than typical sans-serif digits.
  std::size_t code_points = 0;
  for (const char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++code_points;
  }
  return static_cast<int>(std::ceil(static_cast<double>(code_points) * font_px * 0.62));
}

}  // namespace skewbench::report
