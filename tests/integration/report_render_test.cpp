// skewbench report as a browser draws it: headless Chromium takes a screenshot
// of report.html and of one standalone map, and the screenshot must hold a
// heat-map cell of every verdict in the data and of the not-run hatching.
// A cell is recognised as an unbroken run of its colour at least kMinRunPx
// long: the crafted sweep's cells are 32 px wide, while every legend and table
// swatch is 14 px, so swatches alone can never pass. Skipped when Chromium is
// not installed.

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>

#include <png.h>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "report/markup.hpp"
#include "support/cli.hpp"
#include "support/sweep_fixture.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

constexpr int kMinRunPx = 20;
constexpr int kColourTolerance = 6;

std::optional<fs::path> find_chromium() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      std::error_code ec;
      if (fs::exists(fs::path(dir) / name, ec)) return fs::path(dir) / name;
    }
  }
  return std::nullopt;
}

struct Image {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::vector<png_byte> rgb;
};

Image read_png(const fs::path& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_file(&image, path.c_str()) == 0) FAIL(path.string() << ": " << image.message);
  image.format = PNG_FORMAT_RGB;
  Image out{image.width, image.height, std::vector<png_byte>(PNG_IMAGE_SIZE(image))};
  if (png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr) == 0)
    FAIL(path.string() << ": " << image.message);
  return out;
}

int hex_channel(std::string_view colour, std::size_t at) {
  return std::stoi(std::string(colour.substr(at, 2)), nullptr, 16);
}

struct Colour {
  int channel[3];

  explicit Colour(std::string_view hex) : channel{hex_channel(hex, 1), hex_channel(hex, 3), hex_channel(hex, 5)} {}
  bool near(const Image& image, int x, int y) const {
    const auto at = (static_cast<std::size_t>(y) * image.width + static_cast<std::size_t>(x)) * 3;
    for (std::size_t c = 0; c < 3; ++c) {
      if (std::abs(image.rgb[at + c] - channel[c]) > kColourTolerance) return false;
    }
    return true;
  }
};

// The longest unbroken run of pixels near `hex` along the step (dx, dy).
int longest_run(const Image& image, std::string_view hex, int dx, int dy) {
  const Colour colour(hex);
  const int w = static_cast<int>(image.width);
  const int h = static_cast<int>(image.height);
  auto inside = [&](int x, int y) { return x >= 0 && y >= 0 && x < w && y < h; };
  int longest = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const bool starts = colour.near(image, x, y) && !(inside(x - dx, y - dy) && colour.near(image, x - dx, y - dy));
      if (!starts) continue;
      int n = 0;
      for (int cx = x, cy = y; inside(cx, cy) && colour.near(image, cx, cy); cx += dx, cy += dy) ++n;
      longest = std::max(longest, n);
    }
  }
  return longest;
}

// The command the docs give, with a throwaway profile.
Image screenshot(const fs::path& chromium, const fs::path& page, const std::string& window_size) {
  TempDir profile("skewbench-chromium");
  const auto png = profile.path() / "shot.png";
  const auto result = run_command(
      {"timeout", "120", chromium.string(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
       "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
       "--force-color-profile=srgb", "--hide-scrollbars", "--user-data-dir=" + (profile.path() / "profile").string(),
       "--window-size=" + window_size, "--screenshot=" + png.string(), "file://" + fs::absolute(page).string()});
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  REQUIRE(fs::exists(png));
  return read_png(png);
}

void check_draws_the_data(const Image& image) {
  for (const auto state : report::kVerdictStates) {
    INFO(report::style_of(state).name);
    CHECK(longest_run(image, report::style_of(state).fill, 1, 0) >= kMinRunPx);
  }
  // The hatching's stripes run diagonally, up and to the right.
  CHECK(longest_run(image, report::kNotRunStripe, 1, -1) >= kMinRunPx);
}

}  // namespace

TEST_CASE("report.html draws every verdict of the data in headless Chromium") {
  const auto chromium = find_chromium();
  if (!chromium) SKIP("chromium is not installed");
  TempDir dir("skewbench-report-render");
  write_tiny_sweep(dir.path());
  const auto result = run_skewbench({"report", dir.path().string()});
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto image = screenshot(*chromium, dir.path() / "report.html", "1400,2400");
  CHECK(image.width == 1400);
  check_draws_the_data(image);
}

TEST_CASE("a standalone map SVG draws every verdict of its slice in headless Chromium") {
  const auto chromium = find_chromium();
  if (!chromium) SKIP("chromium is not installed");
  TempDir dir("skewbench-report-render");
  write_tiny_sweep(dir.path());
  REQUIRE(run_skewbench({"report", dir.path().string()}).exit_code == 0);
  check_draws_the_data(screenshot(*chromium, dir.path() / "maps" / "beta__b___offset_s__by__eps_s.svg", "500,400"));
}

TEST_CASE("skewbench report --out writes elsewhere and prints every path it wrote") {
  TempDir dir("skewbench-report-render");
  write_tiny_sweep(dir.path() / "sweep");
  const auto out = dir.path() / "out";
  const auto result = run_skewbench({"report", (dir.path() / "sweep").string(), "--out", out.string()});
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, ContainsSubstring("wrote " + (out / "report.html").string()));
  CHECK_THAT(result.output,
             ContainsSubstring("wrote " + (out / "maps" / "alpha__offset_s__by__recovery_s.svg").string()));
  CHECK(fs::exists(out / "maps" / "beta__b___offset_s__by__recovery_s.svg"));
  CHECK_FALSE(fs::exists(dir.path() / "sweep" / "report.html"));
}

TEST_CASE("skewbench report exits 2 naming the file when the directory holds no sweep or a malformed one") {
  TempDir dir("skewbench-report-render");
  auto result = run_skewbench({"report", dir.path().string()});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, ContainsSubstring((dir.path() / "sweep.json").string()));

  write_tiny_sweep(dir.path());
  write_file_atomically(dir.path() / "cells.jsonl", "{\"cell\": 0,\n");
  result = run_skewbench({"report", dir.path().string()});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, ContainsSubstring((dir.path() / "cells.jsonl").string() + ":1"));
}
