#pragma once

// A closed vocabulary: an enum and the one spelling of each of its values,
// written once and read both ways. A word outside it parses to nullopt, never
// to a default; `names()` feeds the allowed values of a file's schema check.
//
//   enum class Colour { red, green };
//   inline constexpr auto kColours = vocabulary<Colour>({{Colour::red, "red"}, {Colour::green, "green"}});
//   kColours.name(Colour::red) == "red";  kColours.parse("blue") == std::nullopt;

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace skewbench {

template <typename Enum, std::size_t N>
class Vocabulary {
 public:
  using Entry = std::pair<Enum, std::string_view>;

  constexpr explicit Vocabulary(const std::array<Entry, N>& entries) : entries_(entries) {}

  // The spelling of `value`; every value of the enum must have one.
  constexpr std::string_view name(Enum value) const {
    for (const auto& [v, spelling] : entries_) {
      if (v == value) return spelling;
    }
    return "INVALID";
  }

  constexpr std::optional<Enum> parse(std::string_view word) const {
    for (const auto& [v, spelling] : entries_) {
      if (spelling == word) return v;
    }
    return std::nullopt;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : entries_) out.emplace_back(entry.second);
    return out;
  }

  // "a, b or c", for a message that names what is allowed.
  std::string listed() const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? " or " : ", ";
      out += entries_[i].second;
    }
    return out;
  }

  constexpr std::array<Enum, N> values() const {
    std::array<Enum, N> out{};
    for (std::size_t i = 0; i < N; ++i) out[i] = entries_[i].first;
    return out;
  }

 private:
  std::array<Entry, N> entries_;
};

template <typename Enum, std::size_t N>
constexpr Vocabulary<Enum, N> vocabulary(const std::pair<Enum, std::string_view> (&entries)[N]) {
  std::array<std::pair<Enum, std::string_view>, N> array{};
  for (std::size_t i = 0; i < N; ++i) array[i] = entries[i];
  return Vocabulary<Enum, N>(array);
}

}  // namespace skewbench
