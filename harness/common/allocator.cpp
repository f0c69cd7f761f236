#include "common/allocator.hpp"

#ifdef SKEWBENCH_MIMALLOC
#include <mimalloc.h>
#endif

namespace skewbench {

std::string allocator_name() {
#ifdef SKEWBENCH_MIMALLOC
  // mi_version() is 100 * major + 10 * minor + patch, e.g. 209. Calling it
  // also keeps libmimalloc among the libraries the process loads where the
  // linker drops libraries nothing calls (--as-needed).
  const int version = mi_version();
  return "mimalloc " + std::to_string(version / 100) + "." + std::to_string(version / 10 % 10) + "." +
         std::to_string(version % 10);
#else
  return "the C library's malloc";
#endif
}

}  // namespace skewbench
