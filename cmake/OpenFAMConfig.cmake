# CMake package configuration of OpenFAM (the Go implementation's C library).
#
#   find_package(OpenFAM 3.2 REQUIRED)
#   target_link_libraries(app PRIVATE OpenFAM::openfam)
#
# Installed as PREFIX/lib/cmake/OpenFAM/OpenFAMConfig.cmake. Every path is
# found from this file's own place, so an installed tree works wherever it
# is put (any PREFIX, a DESTDIR staging tree, a copy moved elsewhere).

get_filename_component(_openfam_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(NOT TARGET OpenFAM::openfam)
  if(NOT EXISTS "${_openfam_prefix}/lib/libopenfam.so.0" OR NOT EXISTS "${_openfam_prefix}/include/openfam.h")
    set(OpenFAM_FOUND FALSE)
    set(OpenFAM_NOT_FOUND_MESSAGE
        "OpenFAM: ${_openfam_prefix}/lib/libopenfam.so.0 or ${_openfam_prefix}/include/openfam.h is missing (incomplete install?)")
    unset(_openfam_prefix)
    return()
  endif()
  add_library(OpenFAM::openfam SHARED IMPORTED)
  set_target_properties(OpenFAM::openfam PROPERTIES
    IMPORTED_LOCATION "${_openfam_prefix}/lib/libopenfam.so.0"
    IMPORTED_SONAME "libopenfam.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_openfam_prefix}/include")
endif()

# The conventional result variables, for projects that do not use targets.
set(OpenFAM_INCLUDE_DIRS "${_openfam_prefix}/include")
set(OpenFAM_LIBRARIES OpenFAM::openfam)
unset(_openfam_prefix)
