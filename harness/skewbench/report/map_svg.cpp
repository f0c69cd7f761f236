#include "report/map_svg.hpp"

#include <algorithm>
#include <sstream>

#include "common/text.hpp"

namespace skewbench::report {

namespace {

constexpr int kMinCellPx = 8;
constexpr int kMaxCellPx = 32;
constexpr int kGridTargetWidthPx = 500;
constexpr int kGridTargetHeightPx = 320;
constexpr int kLetterMinCellPx = 14;
constexpr int kGridLineMinCellPx = 10;
constexpr int kPadPx = 14;
constexpr int kTitleFontPx = 15;
constexpr int kTextFontPx = 12;
constexpr int kTickFontPx = 11;
constexpr int kLineStepPx = 18;
constexpr int kLaneStepPx = 18;
constexpr int kLegendRowPx = 22;
constexpr int kSwatchPx = 14;
constexpr std::string_view kInk = "#1b1b1b";
constexpr std::string_view kMutedInk = "#555555";

std::string quoted_attribute(std::string_view attribute_value) {
  std::string out(1, '"');
  out += escape_xml(attribute_value);
  out += '"';
  return out;
}

std::vector<std::string> subtitle_lines(const Slice& slice) {
  std::vector<std::string> held;
  std::vector<std::string> unused;
  for (const auto& [name, value] : slice.held()) {
    if (value == kNotApplicable) {
      unused.push_back(name);
    } else {
      held.push_back(name + " = " + value);
    }
  }
  for (const auto* axis : {&slice.x(), &slice.y()}) {
    if (!axis->applies()) unused.push_back(axis->name());
  }
  std::vector<std::string> lines;
  if (!held.empty()) lines.push_back("other axes held at " + text::join(held, ", "));
  if (!unused.empty()) lines.push_back("not used by this policy (n/a): " + text::join(unused, ", "));
  return lines;
}

// Where everything goes. Row 0 of the y axis is drawn at the bottom.
struct Layout {
  int cell = 0;
  int nx = 0;
  int ny = 0;
  int left = 0;
  int top = 0;
  int width = 0;
  int height = 0;
  int subtitle_top = 0;
  int lanes_top = 0;
  int legend_top = 0;
  int mark_list_top = 0;
  bool y_title_horizontal = false;   // a rotated y-axis title longer than the grid is set level instead
  std::vector<int> lane_of_mark;     // per placed mark; -1 when not on the grid
  std::vector<int> label_x_of_mark;  // left edge of its label above the grid
  std::vector<int> legend_x;         // per legend item
  std::vector<int> legend_row;

  int grid_w() const { return nx * cell; }
  int grid_h() const { return ny * cell; }
  int bottom() const { return top + grid_h(); }
  int col_x(std::size_t i) const { return left + static_cast<int>(i) * cell; }
  int row_y(std::size_t j) const { return top + (ny - 1 - static_cast<int>(j)) * cell; }
  int centre_x(std::size_t i) const { return col_x(i) + cell / 2; }
  int centre_y(std::size_t j) const { return row_y(j) + cell / 2; }
};

struct LegendItem {
  CellState state;
  std::string text;
};

std::vector<LegendItem> legend_items(const Slice& slice) {
  std::vector<LegendItem> items;
  for (const auto state : kVerdictStates) {
    items.push_back({state, std::string(style_of(state).name) + " " + std::to_string(slice.count(state))});
  }
  if (const auto missing = slice.count(CellState::NotRun); missing > 0) {
    items.push_back({CellState::NotRun, "not run " + std::to_string(missing)});
  }
  return items;
}

// A mark's entry under the legend: its label and verdict, then where it is.
std::pair<std::string, std::string> mark_lines(const Slice& slice, const PlacedMark& mark) {
  if (!mark.cell) return {mark.label + ": " + mark.off_map_reason, mark.at_text};
  return {mark.label + ": " + std::string(style_of(slice.at(mark.cell->first, mark.cell->second)).name), mark.at_text};
}

class MapRenderer {
 public:
  MapRenderer(const Slice& slice, std::string id_prefix) : slice_(slice), id_(std::move(id_prefix)) {}

  std::string render() {
    plan();
    open();
    cells();
    grid_lines();
    letters();
    axes();
    marks_on_grid();
    legend();
    mark_list();
    out_ << "</svg>\n";
    return out_.str();
  }

 private:
  // Horizontal layout first (cell size, margins, width), then top to bottom.
  void plan() {
    plan_grid();
    plan_width();
    auto& l = layout_;
    l.subtitle_top = kPadPx + kTitleFontPx + 4;
    l.lanes_top = l.subtitle_top + static_cast<int>(subtitle_lines(slice_).size()) * kLineStepPx + 6;
    const int lanes = plan_mark_lanes();
    l.top = l.lanes_top + lanes * kLaneStepPx + (lanes > 0 ? 12 : 0);
    l.legend_top = l.bottom() + 48;
    const int legend_rows = plan_legend();
    l.mark_list_top = l.legend_top + legend_rows * kLegendRowPx + 4;
    l.height = l.mark_list_top + static_cast<int>(slice_.marks().size()) * 2 * kLineStepPx + kPadPx - 4;
  }

  // Square cells sized to the target grid, and a left margin for the y axis.
  void plan_grid() {
    auto& l = layout_;
    l.nx = static_cast<int>(slice_.x().size());
    l.ny = static_cast<int>(slice_.y().size());
    l.cell = std::clamp(std::min(kGridTargetWidthPx / l.nx, kGridTargetHeightPx / l.ny), kMinCellPx, kMaxCellPx);
    int tick_w = 0;
    for (const auto& t : slice_.y().ticks()) tick_w = std::max(tick_w, text_width_px(t, kTickFontPx));
    const int y_title_w = text_width_px(slice_.y().name(), kTextFontPx);
    l.y_title_horizontal = y_title_w > l.grid_h() - 4;
    l.left = kPadPx + (l.y_title_horizontal ? y_title_w : kTextFontPx) + 10 + tick_w + 6;
  }

  // Wide enough for the grid and for every line of text.
  void plan_width() {
    auto& l = layout_;
    l.width =
        std::max({l.left + l.grid_w() + kPadPx + 6, 360, text_width_px(map_title(slice_), kTitleFontPx) + 2 * kPadPx});
    for (const auto& line : subtitle_lines(slice_))
      l.width = std::max(l.width, text_width_px(line, kTextFontPx) + 2 * kPadPx);
    for (const auto& m : slice_.marks()) {
      const auto [first, second] = mark_lines(slice_, m);
      l.width = std::max({l.width, text_width_px(first, kTextFontPx) + 2 * kPadPx + 18,
                          text_width_px(second, kTickFontPx) + 2 * kPadPx + 18});
    }
  }

  // Labels of the marks go in lanes above the grid, with a leader line down to
  // the column of the ring, so they never cover a cell; overlapping labels take
  // a new lane.
  int plan_mark_lanes() {
    auto& l = layout_;
    std::vector<int> lane_end;
    for (const auto& m : slice_.marks()) {
      l.lane_of_mark.push_back(-1);
      l.label_x_of_mark.push_back(0);
      if (!m.cell) continue;
      const int w = text_width_px(m.label, kTextFontPx);
      const int x = std::clamp(l.centre_x(m.cell->first) - w / 2, kPadPx, std::max(kPadPx, l.width - kPadPx - w));
      std::size_t lane = 0;
      while (lane < lane_end.size() && x < lane_end[lane] + 10) ++lane;
      if (lane == lane_end.size()) lane_end.push_back(0);
      lane_end[lane] = x + w;
      l.lane_of_mark.back() = static_cast<int>(lane);
      l.label_x_of_mark.back() = x;
    }
    return static_cast<int>(lane_end.size());
  }

  int plan_legend() {
    auto& l = layout_;
    int x = kPadPx;
    int row = 0;
    for (const auto& item : legend_items(slice_)) {
      const int w = kSwatchPx + 6 + text_width_px(item.text, kTextFontPx) + 18;
      if (x > kPadPx && x + w > l.width - kPadPx) {
        x = kPadPx;
        ++row;
      }
      l.legend_x.push_back(x);
      l.legend_row.push_back(row);
      x += w;
    }
    return row + 1;
  }

  std::string fill_of(CellState state) const {
    const auto fill = style_of(state).fill;
    return fill.empty() ? "url(#" + id_ + "-notrun)" : std::string(fill);
  }

  void open() {
    const auto& l = layout_;
    const auto title = map_title(slice_);
    out_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << l.width << "\" height=\"" << l.height
         << "\" viewBox=\"0 0 " << l.width << " " << l.height << "\" font-family=" << quoted_attribute(kFontStack)
         << " role=\"img\" aria-label=" << quoted_attribute(title) << ">\n";
    out_ << "<title>" << escape_xml(title) << "</title>\n";
    out_ << "<defs><pattern id=\"" << id_ << "-notrun\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\""
         << " patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"" << kNotRunBackground
         << "\"/><rect width=\"2\" height=\"6\" fill=\"" << kNotRunStripe << "\"/></pattern></defs>\n";
    out_ << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    text(kPadPx, kPadPx + kTitleFontPx - 2, title, kTitleFontPx, kInk, "font-weight=\"600\"");
    int y = l.subtitle_top + kTextFontPx;
    for (const auto& line : subtitle_lines(slice_)) {
      text(kPadPx, y, line, kTextFontPx, kMutedInk);
      y += kLineStepPx;
    }
  }

  void text(int x, int y, std::string_view content, int font_px, std::string_view colour, std::string_view extra = "") {
    out_ << "<text x=\"" << x << "\" y=\"" << y << "\" font-size=\"" << font_px << "\" fill=\"" << colour << "\"";
    if (!extra.empty()) out_ << " " << extra;
    out_ << ">" << escape_xml(content) << "</text>\n";
  }

  std::string cell_range_text(std::size_t from, std::size_t to, std::size_t row) const {
    const auto& xt = slice_.x().ticks();
    std::string s = slice_.x().name() + " = " + xt[from];
    if (to > from) s += " … " + xt[to];
    return s + ", " + slice_.y().name() + " = " + slice_.y().ticks()[row];
  }

  // Runs of equal cells in a row become one rectangle, which keeps large maps small.
  void cells() {
    const auto& l = layout_;
    out_ << "<g>\n";
    for (std::size_t j = 0; j < static_cast<std::size_t>(l.ny); ++j) {
      std::size_t i = 0;
      while (i < static_cast<std::size_t>(l.nx)) {
        const auto state = slice_.at(i, j);
        std::size_t end = i;
        while (end + 1 < static_cast<std::size_t>(l.nx) && slice_.at(end + 1, j) == state) ++end;
        out_ << "<rect x=\"" << l.col_x(i) << "\" y=\"" << l.row_y(j) << "\" width=\""
             << static_cast<int>(end - i + 1) * l.cell << "\" height=\"" << l.cell << "\" fill=\"" << fill_of(state)
             << "\"><title>" << escape_xml(cell_range_text(i, end, j) + ": " + std::string(style_of(state).name))
             << "</title></rect>\n";
        i = end + 1;
      }
    }
    out_ << "</g>\n";
  }

  // White lines between cells, except on maps so dense that they would only add noise.
  void grid_lines() {
    const auto& l = layout_;
    std::ostringstream path;
    const bool lines = l.cell >= kGridLineMinCellPx;
    for (int i = 1; lines && i < l.nx; ++i) path << "M" << l.left + i * l.cell << " " << l.top << "V" << l.bottom();
    for (int j = 1; lines && j < l.ny; ++j)
      path << "M" << l.left << " " << l.top + j * l.cell << "H" << l.left + l.grid_w();
    if (!path.str().empty())
      out_ << "<path d=\"" << path.str() << "\" stroke=\"#ffffff\" stroke-width=\"1\" fill=\"none\"/>\n";
    out_ << "<rect x=\"" << l.left << "\" y=\"" << l.top << "\" width=\"" << l.grid_w() << "\" height=\"" << l.grid_h()
         << "\" fill=\"none\" stroke=\"" << kMutedInk << "\" stroke-width=\"1\"/>\n";
  }

  void letters() {
    const auto& l = layout_;
    if (l.cell < kLetterMinCellPx) return;
    const int font = std::min(13, l.cell / 2);
    out_ << "<g font-size=\"" << font << "\" text-anchor=\"middle\" font-weight=\"600\" fill-opacity=\"0.75\">\n";
    for (std::size_t j = 0; j < static_cast<std::size_t>(l.ny); ++j) {
      for (std::size_t i = 0; i < static_cast<std::size_t>(l.nx); ++i) {
        const auto& style = style_of(slice_.at(i, j));
        if (style.letter.empty()) continue;
        out_ << "<text x=\"" << l.centre_x(i) << "\" y=\"" << l.centre_y(j) + font * 7 / 20 << "\" fill=\"" << style.ink
             << "\">" << style.letter << "</text>\n";
      }
    }
    out_ << "</g>\n";
  }

  // Tick labels are thinned so that neighbours never overlap.
  void axes() {
    const auto& l = layout_;
    const auto& xt = slice_.x().ticks();
    int widest = 0;
    for (const auto& t : xt) widest = std::max(widest, text_width_px(t, kTickFontPx));
    const auto x_every = static_cast<std::size_t>(std::max(1, (widest + 3 + l.cell - 1) / l.cell));
    for (std::size_t i = 0; i < xt.size(); i += x_every) {
      text(l.centre_x(i), l.bottom() + 15, xt[i], kTickFontPx, kInk, "text-anchor=\"middle\"");
    }
    const auto y_every = static_cast<std::size_t>(std::max(1, (kTickFontPx + 3 + l.cell - 1) / l.cell));
    for (std::size_t j = 0; j < slice_.y().size(); j += y_every) {
      text(l.left - 6, l.centre_y(j) + 4, slice_.y().ticks()[j], kTickFontPx, kInk, "text-anchor=\"end\"");
    }
    text(l.left + l.grid_w() / 2, l.bottom() + 34, slice_.x().name(), kTextFontPx, kInk,
         "text-anchor=\"middle\" font-weight=\"600\"");
    const int y_mid = l.top + l.grid_h() / 2;
    if (l.y_title_horizontal) {
      text(kPadPx, y_mid + 4, slice_.y().name(), kTextFontPx, kInk, "font-weight=\"600\"");
      return;
    }
    const int y_label_x = kPadPx + kTextFontPx - 2;
    std::ostringstream rotated;
    rotated << "text-anchor=\"middle\" font-weight=\"600\" transform=\"rotate(-90 " << y_label_x << " " << y_mid
            << ")\"";
    text(y_label_x, y_mid, slice_.y().name(), kTextFontPx, kInk, rotated.str());
  }

  void ring(int cx, int cy, int r) {
    out_ << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"" << r
         << "\" fill=\"none\" stroke=\"#ffffff\" stroke-width=\"5\"/>\n<circle cx=\"" << cx << "\" cy=\"" << cy
         << "\" r=\"" << r << "\" fill=\"none\" stroke=\"#000000\" stroke-width=\"2.5\"/>\n";
  }

  void marks_on_grid() {
    const auto& l = layout_;
    const int r = std::max(5, l.cell * 2 / 5);
    for (std::size_t k = 0; k < slice_.marks().size(); ++k) {
      const auto& m = slice_.marks()[k];
      if (!m.cell) continue;
      const int cx = l.centre_x(m.cell->first);
      const int cy = l.centre_y(m.cell->second);
      const int baseline = l.lanes_top + l.lane_of_mark[k] * kLaneStepPx + kTextFontPx;
      std::ostringstream leader;
      leader << "M" << cx << " " << baseline + 4 << "V" << l.top - 6;
      out_ << "<path d=\"" << leader.str() << "\" stroke=\"#ffffff\" stroke-width=\"3.5\" fill=\"none\"/>\n<path d=\""
           << leader.str() << "\" stroke=\"#000000\" stroke-width=\"1.5\" fill=\"none\"/>\n<path d=\"M" << cx - 4 << " "
           << l.top - 7 << "H" << cx + 4 << "L" << cx << " " << l.top - 1 << "Z\" fill=\"#000000\"/>\n";
      ring(cx, cy, r);
      text(l.label_x_of_mark[k], baseline, m.label, kTextFontPx, "#000000", "font-weight=\"700\"");
    }
  }

  void legend() {
    const auto& l = layout_;
    const auto items = legend_items(slice_);
    for (std::size_t k = 0; k < items.size(); ++k) {
      const int x = l.legend_x[k];
      const int y = l.legend_top + l.legend_row[k] * kLegendRowPx;
      out_ << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << kSwatchPx << "\" height=\"" << kSwatchPx
           << "\" fill=\"" << fill_of(items[k].state) << "\" stroke=\"" << kMutedInk << "\" stroke-width=\"0.5\"/>\n";
      text(x + kSwatchPx + 6, y + kSwatchPx - 2, items[k].text, kTextFontPx, kInk);
    }
  }

  void mark_list() {
    const auto& l = layout_;
    int y = l.mark_list_top;
    for (const auto& m : slice_.marks()) {
      ring(kPadPx + 6, y + 6, 5);
      const auto [first, second] = mark_lines(slice_, m);
      text(kPadPx + 18, y + 10, first, kTextFontPx, kInk, "font-weight=\"600\"");
      text(kPadPx + 18, y + 10 + kLineStepPx - 2, second, kTickFontPx, kMutedInk);
      y += 2 * kLineStepPx;
    }
  }

  const Slice& slice_;
  std::string id_;
  Layout layout_;
  std::ostringstream out_;
};

}  // namespace

std::string map_title(const Slice& slice) {
  return slice.policy_label() + ": " + slice.x().name() + " × " + slice.y().name();
}

std::string render_map_svg(const Slice& slice, const std::string& id_prefix) {
  return MapRenderer(slice, id_prefix).render();
}

}  // namespace skewbench::report
