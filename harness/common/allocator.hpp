#pragma once

// The allocator of skewbench and its benchmarks. mimalloc replaces malloc,
// free and operator new for the whole process when it is linked (every build
// but the sanitizers', which replace them themselves): the in-process engine
// allocates on every exchange, and the C library's malloc took about a third
// of its time (docs/benchmarks.md). remote-effect keeps the C library's.

#include <string>

namespace skewbench {

// "mimalloc 2.0.9", or "the C library's malloc" in a build without it.
std::string allocator_name();

}  // namespace skewbench
