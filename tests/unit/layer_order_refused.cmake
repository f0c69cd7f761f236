# cmake -DLAYERS_MODULE=<cmake/SkewbenchLayers.cmake> -DSCRATCH=<dir> -P layer_order_refused.cmake
#
# Configures two throwaway projects with skewbench_layer: one whose layer links
# a layer declared after it, which must stop with an error naming both, and
# the same two layers in the right order, which must configure.
foreach(variable IN ITEMS LAYERS_MODULE SCRATCH)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "pass -D${variable}=...")
  endif()
endforeach()

function(configure_layers name first second expected_result)
  set(dir "${SCRATCH}/${name}")
  file(REMOVE_RECURSE "${dir}")
  file(MAKE_DIRECTORY "${dir}/low" "${dir}/high")
  file(WRITE "${dir}/CMakeLists.txt"
       "cmake_minimum_required(VERSION 3.20)\nproject(layers NONE)\ninclude(\"${LAYERS_MODULE}\")\n"
       "${first}\n${second}\n")
  execute_process(COMMAND "${CMAKE_COMMAND}" -S "${dir}" -B "${dir}/build" RESULT_VARIABLE result
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(said "${out}${err}")
  if(expected_result STREQUAL "refused")
    if(result EQUAL 0)
      message(FATAL_ERROR "FAIL: CMake accepted a layer that links one declared after it")
    endif()
    if(NOT said MATCHES "layer high links skewbench::low, which is not a layer declared before it")
      message(FATAL_ERROR "FAIL: the refusal does not name both layers; CMake said:\n${said}")
    endif()
  elseif(NOT result EQUAL 0)
    message(FATAL_ERROR "FAIL: CMake refused layers declared in order; it said:\n${said}")
  endif()
endfunction()

configure_layers(upward "skewbench_layer(high FOLDER high PUBLIC skewbench::low)" "skewbench_layer(low FOLDER low)"
                 refused)
configure_layers(ordered "skewbench_layer(low FOLDER low)" "skewbench_layer(high FOLDER high PUBLIC skewbench::low)"
                 accepted)
message(STATUS "ok: a layer links only layers declared before it")
