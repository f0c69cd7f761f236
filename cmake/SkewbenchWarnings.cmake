# One place for compiler warnings: every project target links skewbench::warnings.
add_library(skewbench_warnings INTERFACE)
add_library(skewbench::warnings ALIAS skewbench_warnings)
target_compile_options(skewbench_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  $<$<BOOL:${SKEWBENCH_WARNINGS_AS_ERRORS}>:-Werror>)
