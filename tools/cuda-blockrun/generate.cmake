# Run by the build (CMakeLists.txt): the man page and the bash and zsh completions, made by the built wrapper
# from its tables of flags (src/config/options.def, tools/cuda-blockrun/commands.def) with its hidden flags.
#   cmake -DWRAPPER=... -DMAN_PAGE=... -DBASH_COMPLETION=... -DZSH_COMPLETION=... -P generate.cmake
foreach(pair "--help-man;${MAN_PAGE}" "--help-bash-completion;${BASH_COMPLETION}"
             "--help-zsh-completion;${ZSH_COMPLETION}")
  list(GET pair 0 flag)
  list(GET pair 1 output)
  get_filename_component(directory ${output} DIRECTORY)
  file(MAKE_DIRECTORY ${directory})
  execute_process(COMMAND ${WRAPPER} ${flag} OUTPUT_FILE ${output}.new RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${WRAPPER} ${flag} failed: ${status}")
  endif()
  file(RENAME ${output}.new ${output})
endforeach()
# SPDX-License-Identifier: MIT
