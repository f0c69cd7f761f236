#pragma once

// GitHub Actions awareness (docs/ci.md, "GitHub Actions"): when the
// environment says GITHUB_ACTIONS=true, or --github forces it, a
// command also writes ::error annotations on the files to blame and appends
// its Markdown outcome to $GITHUB_STEP_SUMMARY. Elsewhere nothing changes.

#include <optional>
#include <ostream>
#include <string>

namespace skewbench::cli {

// True under GitHub Actions (GITHUB_ACTIONS=true) or when forced.
bool github_actions(bool forced);

// The workflow command `::error file=F,line=L,title=T::message`, escaped as
// GitHub's workflow commands require.
std::string github_error(const std::optional<std::string>& file, const std::optional<int>& line,
                         const std::string& title, const std::string& message);

// Appends `markdown` to the file $GITHUB_STEP_SUMMARY names; nothing when it is
// unset. False, saying why on stderr, when it cannot be written.
bool append_step_summary(const std::string& markdown);

}  // namespace skewbench::cli
