# Install rules (POSENC_INSTALL): the libraries, the headers, the CMake package
# (find_package(posenc): posenc::posenc, posenc::posenc_static) and posenc.pc.
include(CMakePackageConfigHelpers)

set(POSENC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/posenc)
set(POSENC_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(TARGETS posenc posenc_static EXPORT posencTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/posenc.h
              ${PROJECT_SOURCE_DIR}/include/posenc_inline.h
              ${PROJECT_BINARY_DIR}/include/posenc_version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(EXPORT posencTargets NAMESPACE posenc:: DESTINATION ${POSENC_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/posencConfig.cmake.in
  ${PROJECT_BINARY_DIR}/posencConfig.cmake INSTALL_DESTINATION ${POSENC_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/posencConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/posencConfig.cmake
              ${PROJECT_BINARY_DIR}/posencConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/posencSleef.cmake
        DESTINATION ${POSENC_CMAKE_DIR})

# posenc.pc. SLEEF comes through its own sleef.pc where there is one (Debian's libsleef-dev
# has it), else as -lsleef; libm and the thread library are only needed by static links.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(POSENC_PC_SLEEF QUIET sleef)
endif()
if(POSENC_PC_SLEEF_FOUND)
  set(POSENC_PC_REQUIRES_PRIVATE "sleef")
  set(POSENC_PC_LIBS_PRIVATE "-lm -lpthread")
else()
  set(POSENC_PC_REQUIRES_PRIVATE "")
  set(POSENC_PC_LIBS_PRIVATE "-lsleef -lm -lpthread")
  get_filename_component(sleef_dir "${SLEEF_LIBRARY}" DIRECTORY)
  if(sleef_dir AND NOT sleef_dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
    string(PREPEND POSENC_PC_LIBS_PRIVATE "-L${sleef_dir} ")
  endif()
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(POSENC_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(POSENC_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
# Written at install time, so that prefix= is where `cmake --install --prefix` puts it.
install(CODE "
set(POSENC_PC_VERSION [[${PROJECT_VERSION}]])
set(POSENC_PC_LIBDIR [[${POSENC_PC_LIBDIR}]])
set(POSENC_PC_INCLUDEDIR [[${POSENC_PC_INCLUDEDIR}]])
set(POSENC_PC_REQUIRES_PRIVATE [[${POSENC_PC_REQUIRES_PRIVATE}]])
set(POSENC_PC_LIBS_PRIVATE [[${POSENC_PC_LIBS_PRIVATE}]])
set(POSENC_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
configure_file([[${PROJECT_SOURCE_DIR}/cmake/posenc.pc.in]] [[${PROJECT_BINARY_DIR}/posenc.pc]]
               @ONLY)
")
install(FILES ${PROJECT_BINARY_DIR}/posenc.pc DESTINATION ${POSENC_PC_DIR})
