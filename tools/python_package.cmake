# The Python package's layout (python/cuda_blockrun, docs/python.md): its modules, and beside them
#   bin/cuda-blockrun                    the wrapper (it finds the shim at bin/../lib)
#   lib/libcuda_blockrun.so              the shim
#   lib/libcuda_blockrun_rebind.so       the rebind library
#   share/man/man1/cuda-blockrun.1       the man page
# where bin/, lib/ and share/ are links to the built or installed files; the wheel (tools/wheel.py) holds copies.
#
# As a script (CMakeLists.txt, "the Python package"), it stages the package in the build tree:
#   cmake -DSOURCE=python/cuda_blockrun -DPACKAGE=build/python/cuda_blockrun -DWRAPPER=... -DSHIM=...
#         -DREBIND=... -DMAN_PAGE=... -DSTAMP=... -P tools/python_package.cmake
# Included by the install script, it gives cuda_blockrun_python_package_links() for the installed package.
cmake_policy(VERSION 3.20)

# The package's own files under SOURCE: everything but compiled Python and the names the layout reserves.
function(cuda_blockrun_python_package_files source out)
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE "${source}" "${source}/*")
  list(FILTER files EXCLUDE REGEX "(^|/)__pycache__/|\\.py[co]$|^(bin|lib|share)/")
  list(SORT files)
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

# Points PACKAGE/RELATIVE at TARGET with a relative symbolic link (both absolute paths; the link may be made under
# a DESTDIR that TARGET does not include: LINK_ROOT is prepended to where the link is written only).
function(cuda_blockrun_python_package_link package relative target link_root)
  get_filename_component(directory "${package}/${relative}" DIRECTORY)
  file(RELATIVE_PATH value "${directory}" "${target}")
  file(MAKE_DIRECTORY "${link_root}${directory}")
  file(REMOVE "${link_root}${package}/${relative}")
  file(CREATE_LINK "${value}" "${link_root}${package}/${relative}" SYMBOLIC)
endfunction()

# The links of an installed package: PACKAGE and the four targets absolute (without DESTDIR), LINK_ROOT the
# DESTDIR (or empty).
function(cuda_blockrun_python_package_links package wrapper shim rebind man_page link_root)
  cuda_blockrun_python_package_link("${package}" bin/cuda-blockrun "${wrapper}" "${link_root}")
  get_filename_component(shim_name "${shim}" NAME)
  get_filename_component(rebind_name "${rebind}" NAME)
  cuda_blockrun_python_package_link("${package}" "lib/${shim_name}" "${shim}" "${link_root}")
  cuda_blockrun_python_package_link("${package}" "lib/${rebind_name}" "${rebind}" "${link_root}")
  cuda_blockrun_python_package_link("${package}" share/man/man1/cuda-blockrun.1 "${man_page}" "${link_root}")
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  foreach(variable SOURCE PACKAGE WRAPPER SHIM REBIND MAN_PAGE STAMP)
    if(NOT DEFINED ${variable})
      message(FATAL_ERROR "python_package.cmake: -D${variable}=... is needed")
    endif()
  endforeach()
  # Copies of the modules (a build tree's Python writes __pycache__ beside them, never into the sources).
  set(wanted "")
  if(IS_DIRECTORY "${SOURCE}")
    cuda_blockrun_python_package_files("${SOURCE}" wanted)
  endif()
  foreach(file IN LISTS wanted)
    configure_file("${SOURCE}/${file}" "${PACKAGE}/${file}" COPYONLY)  # written only if different
  endforeach()
  # A module removed from the sources goes from the stage too.
  if(IS_DIRECTORY "${PACKAGE}")
    cuda_blockrun_python_package_files("${PACKAGE}" staged)
    foreach(file IN LISTS staged)
      if(NOT file IN_LIST wanted)
        file(REMOVE "${PACKAGE}/${file}")
      endif()
    endforeach()
  endif()
  cuda_blockrun_python_package_links("${PACKAGE}" "${WRAPPER}" "${SHIM}" "${REBIND}" "${MAN_PAGE}" "")
  file(TOUCH "${STAMP}")
endif()
# SPDX-License-Identifier: MIT
