# `docs`: the API reference of include/posenc.h, by Doxygen, into <build>/docs/html.
# docs/Doxyfile holds the settings (paths relative to the source root, so that
# `doxygen docs/Doxyfile` works there too); this target only points its output at the build
# directory. A Doxygen warning fails the target.
set(POSENC_DOXYFILE ${PROJECT_BINARY_DIR}/docs/Doxyfile)
file(CONFIGURE OUTPUT ${POSENC_DOXYFILE} CONTENT "@INCLUDE = ${PROJECT_SOURCE_DIR}/docs/Doxyfile
OUTPUT_DIRECTORY = ${PROJECT_BINARY_DIR}/docs
")
add_custom_target(docs
  COMMAND Doxygen::doxygen ${POSENC_DOXYFILE}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "Doxygen: API reference in ${PROJECT_BINARY_DIR}/docs/html"
  VERBATIM)
