#pragma once

// The target.json a user starts from to put a service of their own under the
// series (`skewbench targets init NAME`): every field of a service of its own
// wire, each with a comment saying what it is, filled in for a typical
// payment service so that the file is read as it is printed. target.json may
// hold comments (// and /* */); docs/targets.md walks through it.

#include <string>

namespace skewbench::targets {

// The commented target.json of a target named `name`. Throws TargetFileError
// when `name` is not a target's name (kTargetNamePattern).
std::string target_template(const std::string& name);

}  // namespace skewbench::targets
