# Defines the imported target posenc::sleef (SLEEF's header and library), unless it exists.
# Used by posenc's own build and, installed next to it, by posencConfig.cmake, so that the
# exported posenc::posenc_static names SLEEF by target and the consumer's machine finds it:
# no path of the build machine is baked into the package. Hints: SLEEF_INCLUDE_DIR,
# SLEEF_LIBRARY (cache variables), or CMAKE_PREFIX_PATH.
if(TARGET posenc::sleef)
  return()
endif()

find_path(SLEEF_INCLUDE_DIR sleef.h DOC "Directory holding SLEEF's sleef.h")
find_library(SLEEF_LIBRARY sleef DOC "SLEEF library (libsleef)")

if(SLEEF_LIBRARY)
  add_library(posenc::sleef UNKNOWN IMPORTED)
  set_target_properties(posenc::sleef PROPERTIES IMPORTED_LOCATION "${SLEEF_LIBRARY}")
  if(SLEEF_INCLUDE_DIR)
    set_target_properties(posenc::sleef PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                                                   "${SLEEF_INCLUDE_DIR}")
  endif()
else()
  # No development library (only the runtime libsleef.so.N, which is all the shared
  # posenc needs): static users get a plain -lsleef, and the linker's message if it fails.
  add_library(posenc::sleef INTERFACE IMPORTED)
  set_target_properties(posenc::sleef PROPERTIES INTERFACE_LINK_LIBRARIES sleef)
endif()
