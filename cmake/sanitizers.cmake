# Instrumented builds (README "Hardening checks"; scripts/sanitize.sh, scripts/fuzz.sh).
# Each wants its own build directory: the flags apply to every target of the tree.
#
#   -DFERRY_SANITIZE=address  AddressSanitizer + UndefinedBehaviorSanitizer, any UB is fatal
#   -DFERRY_SANITIZE=thread   ThreadSanitizer
#   -DFERRY_FUZZ=ON           libFuzzer targets in tests/fuzz (clang only), with ASan + UBSan;
#                             build them with `--target ferry_fuzz`, run them with `ctest -L fuzz`
set(FERRY_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan+UBSan), thread (TSan) or empty")
set_property(CACHE FERRY_SANITIZE PROPERTY STRINGS "" address thread)
option(FERRY_FUZZ "Build the libFuzzer targets in tests/fuzz (needs clang)" OFF)

# RapidJSON 1.1's member iterators compare through operators that C++20 also finds reversed;
# clang warns at every range-for over a JSON object. The code is RapidJSON's, not ours.
# clang's -Wextra also flags aggregates initialised without their trailing fields even when
# those have default member initialisers (PeerOrigin{"https", "h", 443}); gcc does not.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-ambiguous-reversed-operator>
                      $<$<COMPILE_LANGUAGE:CXX>:-Wno-missing-field-initializers>)
  # Debian's gcc links --as-needed, its clang does not: without it a clang ferry also needs
  # libevent_pthreads, which the Docker runtime stage does not install (docker_compose test).
  add_link_options(-Wl,--as-needed)
endif()

set(_ferry_ubsan -fsanitize=undefined -fno-sanitize-recover=undefined)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # Third-party undefined behaviour we cannot fix here; each entry says why.
  list(APPEND _ferry_ubsan -fsanitize-ignorelist=${CMAKE_CURRENT_LIST_DIR}/ubsan-ignorelist.txt)
endif()
if(FERRY_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FERRY_FUZZ needs clang (CC=clang CXX=clang++): libFuzzer is clang's")
  endif()
  if(FERRY_SANITIZE)
    message(FATAL_ERROR "FERRY_FUZZ already builds with ASan + UBSan; leave FERRY_SANITIZE empty")
  endif()
  # Coverage instrumentation everywhere; only the fuzz executables link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link,address ${_ferry_ubsan} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address ${_ferry_ubsan})
  # Line tables only (after RelWithDebInfo's -g, so they win): a crash report still names every
  # frame's function, file and line (inlined ones too), and nobody steps through a fuzz build
  # in a debugger. On a sample of 6 of its 64 objects: 11 % less compile CPU (29.7 s -> 26.3 s),
  # objects 42 % smaller (docs/testing.md).
  add_compile_options(-gline-tables-only)
elseif(FERRY_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address ${_ferry_ubsan} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address ${_ferry_ubsan})
elseif(FERRY_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(FERRY_SANITIZE)
  message(FATAL_ERROR "FERRY_SANITIZE must be address, thread or empty (got ${FERRY_SANITIZE})")
endif()
