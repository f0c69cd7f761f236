#pragma once

// One heat map as an SVG document: a policy's verdicts over two axes, with
// axis labels and tick values, a legend with the slice's counts, and the
// published points marked. The same document is written to maps/*.svg and
// embedded verbatim in report.html.

#include <string>

#include "report/slices.hpp"

namespace skewbench::report {

// `id_prefix` keeps the element ids of several maps on one page apart.
std::string render_map_svg(const Slice& slice, const std::string& id_prefix);

// The title of a map: "<policy label>: <x axis> × <y axis>".
std::string map_title(const Slice& slice);

}  // namespace skewbench::report
