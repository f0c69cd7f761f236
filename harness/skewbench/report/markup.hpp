#pragma once

// Small pieces shared by the report's HTML page and its SVG maps: escaping,
// the verdict palette, and a rough text-width estimate for layout.

#include <cstdint>
#include <string>
#include <string_view>

namespace skewbench::report {

// What a heat-map cell shows: a cell's verdict, or that no record of it exists.
enum class CellState : std::uint8_t { NotRun, Safe, Conflict, Held, Error };

inline constexpr CellState kVerdictStates[] = {CellState::Safe, CellState::Conflict, CellState::Held, CellState::Error};

// The colours are from the Okabe-Ito palette, chosen to stay apart under the
// common colour-vision deficiencies; each cell also carries its letter, so the
// map reads without colour at all.
struct StateStyle {
  std::string_view name;    // "SAFE", ..., "not run"
  std::string_view fill;    // "#rrggbb"; empty for the hatched not-run pattern
  std::string_view ink;     // colour of the letter drawn on the fill
  std::string_view letter;  // "S", "C", "H", "E"; empty for not run
  std::string_view meaning;
};

const StateStyle& style_of(CellState state);

// Parses a cells.jsonl verdict; returns false for anything else.
bool state_from_verdict(std::string_view verdict, CellState& state);

// The grey hatching of a cell that has no record; faintly blue, so that no
// anti-aliased grey text can be mistaken for it in a screenshot.
inline constexpr std::string_view kNotRunBackground = "#e4e4ec";
inline constexpr std::string_view kNotRunStripe = "#8a8a9c";

// Replaces & < > " ' by character references: safe in text and in quoted attributes.
std::string escape_xml(std::string_view text);

// The font stack: whatever sans-serif the system has, no web fonts.
inline constexpr std::string_view kFontStack =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";

// An estimate of the width in pixels of text set in kFontStack, generous
// enough that labels laid out with it do not collide.
int text_width_px(std::string_view text, int font_px);

}  // namespace skewbench::report
