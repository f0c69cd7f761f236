# Records the harness version, the git commit and the build type in a generated
# header, <skewbench/build_info.hpp>, so every artifact can say exactly which
# build produced it. The header is refreshed at every build (not only at
# configure time) by cmake/WriteBuildInfo.cmake, through the target
# skewbench_build_info; it changes, and dependents recompile, only when the
# commit or the dirty state does.
find_package(Git QUIET)
set(SKEWBENCH_BUILD_INFO_HEADER "${PROJECT_BINARY_DIR}/generated/skewbench/build_info.hpp")
set(_skewbench_build_info_args
  -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
  -DOUTPUT=${SKEWBENCH_BUILD_INFO_HEADER}
  -DTEMPLATE=${PROJECT_SOURCE_DIR}/harness/common/build_info.hpp.in
  -DPROJECT_VERSION=${PROJECT_VERSION}
  -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
  -DGIT_EXECUTABLE=${GIT_EXECUTABLE})
# Once now, so the header exists before the first build.
execute_process(COMMAND "${CMAKE_COMMAND}" ${_skewbench_build_info_args} -P "${PROJECT_SOURCE_DIR}/cmake/WriteBuildInfo.cmake")
add_custom_target(skewbench_build_info
  COMMAND "${CMAKE_COMMAND}" ${_skewbench_build_info_args} -P "${PROJECT_SOURCE_DIR}/cmake/WriteBuildInfo.cmake"
  BYPRODUCTS "${SKEWBENCH_BUILD_INFO_HEADER}"
  COMMENT "Recording the git commit in build_info.hpp")
