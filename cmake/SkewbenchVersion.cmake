# Records the harness version, the git commit and the build type in a generated
# header, so every artifact can say exactly which build produced it.
find_package(Git QUIET)
set(SKEWBENCH_GIT_COMMIT "unknown")
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" rev-parse HEAD
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    OUTPUT_VARIABLE SKEWBENCH_GIT_COMMIT
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" status --porcelain --untracked-files=no
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    OUTPUT_VARIABLE SKEWBENCH_GIT_DIRTY
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(SKEWBENCH_GIT_DIRTY)
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
# Re-run configure when HEAD moves, so the recorded commit stays true.
if(EXISTS "${PROJECT_SOURCE_DIR}/.git/HEAD")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/.git/HEAD")
  file(READ "${PROJECT_SOURCE_DIR}/.git/HEAD" _skewbench_head)
  if(_skewbench_head MATCHES "^ref: ([^\n]+)")
    if(EXISTS "${PROJECT_SOURCE_DIR}/.git/${CMAKE_MATCH_1}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/.git/${CMAKE_MATCH_1}")
    endif()
  endif()
endif()
configure_file("${PROJECT_SOURCE_DIR}/harness/common/build_info.hpp.in"
               "${PROJECT_BINARY_DIR}/generated/skewbench/build_info.hpp" @ONLY)
