# skewbench_layer(<name> FOLDER <dir> [SOURCES <files...>]
#                 [PUBLIC <targets...>] [PRIVATE <targets...>])
#
# One layer of the harness: the static library skewbench_<name> (alias
# skewbench::<name>) built from SOURCES, or a header-only INTERFACE library
# when there are none. PUBLIC lists what the layer's headers include (lower
# layers, libraries), PRIVATE what only its sources need.
#
# A layer's headers are included as "<folder>/file.hpp". The include path a
# layer gives is not the source tree (which would show every layer's headers)
# but a folder in the build tree, layers/<name>/, that holds one link named
# <folder> to FOLDER. A target therefore sees the headers of the layers it
# links and of no others: an include that points up a layer fails to compile
# with "No such file or directory".
#
# The order of the skewbench_layer calls is the layer order, written nowhere
# else: a layer may link only layers declared before it (CMake stops with an
# error naming both otherwise), and the global property SKEWBENCH_LAYERS lists
# them in that order for tests/unit/check_layers.sh.
function(skewbench_layer name)
  cmake_parse_arguments(ARG "" "FOLDER" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  get_property(declared GLOBAL PROPERTY SKEWBENCH_LAYERS)
  foreach(dependency IN LISTS ARG_PUBLIC ARG_PRIVATE)
    if(dependency MATCHES "^skewbench::(.+)$" AND NOT CMAKE_MATCH_1 STREQUAL "warnings")
      if(NOT CMAKE_MATCH_1 IN_LIST declared)
        message(FATAL_ERROR "layer ${name} links ${dependency}, which is not a layer declared before it: "
                            "a layer links only the layers below it")
      endif()
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY SKEWBENCH_LAYERS ${name})
  get_filename_component(folder "${ARG_FOLDER}" ABSOLUTE)
  get_filename_component(folder_name "${folder}" NAME)
  set(include_root "${PROJECT_BINARY_DIR}/layers/${name}")
  file(MAKE_DIRECTORY "${include_root}")
  file(CREATE_LINK "${folder}" "${include_root}/${folder_name}" SYMBOLIC)

  set(target skewbench_${name})
  if(ARG_SOURCES)
    add_library(${target} STATIC ${ARG_SOURCES})
    target_include_directories(${target} PUBLIC "${include_root}")
    target_link_libraries(${target} PUBLIC ${ARG_PUBLIC} PRIVATE ${ARG_PRIVATE} skewbench::warnings)
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE "${include_root}")
    target_link_libraries(${target} INTERFACE ${ARG_PUBLIC})
  endif()
  add_library(skewbench::${name} ALIAS ${target})
endfunction()
