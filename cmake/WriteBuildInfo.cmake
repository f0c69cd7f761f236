# Run at every build (cmake -P), so the recorded commit and its "-dirty" mark
# describe the sources actually compiled. configure_file() rewrites the header
# only when its text changes, so an unchanged tree recompiles nothing.
#
# Inputs: SOURCE_DIR, OUTPUT, TEMPLATE, PROJECT_VERSION, CMAKE_BUILD_TYPE, GIT_EXECUTABLE (may be empty).
set(SKEWBENCH_GIT_COMMIT "unknown")
if(GIT_EXECUTABLE AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" rev-parse HEAD
    WORKING_DIRECTORY "${SOURCE_DIR}"
    OUTPUT_VARIABLE SKEWBENCH_GIT_COMMIT
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" status --porcelain --untracked-files=no
    WORKING_DIRECTORY "${SOURCE_DIR}"
    OUTPUT_VARIABLE _dirty
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_dirty)
    string(APPEND SKEWBENCH_GIT_COMMIT "-dirty")
  endif()
endif()
# A commit given from outside (CI, a container build without .git) wins.
if(DEFINED ENV{SKEWBENCH_GIT_COMMIT} AND NOT "$ENV{SKEWBENCH_GIT_COMMIT}" STREQUAL "")
  set(SKEWBENCH_GIT_COMMIT "$ENV{SKEWBENCH_GIT_COMMIT}")
endif()
if(SKEWBENCH_GIT_COMMIT STREQUAL "")
  set(SKEWBENCH_GIT_COMMIT "unknown")
endif()
configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
