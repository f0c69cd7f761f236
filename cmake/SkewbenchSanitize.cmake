# SKEWBENCH_SANITIZE builds every target with the named sanitizers, e.g.
#   cmake -B build-asan -DSKEWBENCH_SANITIZE=address,undefined
#   cmake -B build-tsan -DSKEWBENCH_SANITIZE=thread
# Errors are fatal (no recovery), so a sanitizer finding fails the test that
# triggered it.
if(SKEWBENCH_SANITIZE)
  if(NOT SKEWBENCH_SANITIZE MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
    message(FATAL_ERROR "SKEWBENCH_SANITIZE must be address,undefined, address, undefined or thread; "
                        "got '${SKEWBENCH_SANITIZE}'")
  endif()
  add_compile_options(-fsanitize=${SKEWBENCH_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${SKEWBENCH_SANITIZE})
endif()
