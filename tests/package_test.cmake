# Installs the build in BUILD_DIR into a scratch prefix, then configures, builds and runs the consumer project in
# SOURCE_DIR against it with the same generator and compilers. Run by ctest as `cmake -P`.
foreach(v BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "package_test.cmake: -D${v}=... is required")
  endif()
endforeach()
set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# Only the library package is installed: the top-level rules without subdirectories (headers, exported targets,
# package config) plus src/ (the two libraries), so the test neither needs the CLI / bench to be built nor builds
# anything itself (a build here could relink the library under tests running in parallel). openrnn_tests depends
# on openrnn_static, so both libraries exist once the test binary does.
step("install the headers and package files" ${CMAKE_COMMAND} -DCMAKE_INSTALL_PREFIX=${prefix}
     -DCMAKE_INSTALL_LOCAL_ONLY=ON -DCMAKE_INSTALL_CONFIG_NAME=${BUILD_TYPE} -P ${BUILD_DIR}/cmake_install.cmake)
step("install the libraries" ${CMAKE_COMMAND} -DCMAKE_INSTALL_PREFIX=${prefix}
     -DCMAKE_INSTALL_CONFIG_NAME=${BUILD_TYPE} -P ${BUILD_DIR}/src/cmake_install.cmake)
set(cfg_args -S ${SOURCE_DIR} -B ${build} -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix})
if(C_COMPILER)
  list(APPEND cfg_args -DCMAKE_C_COMPILER=${C_COMPILER})
endif()
if(CXX_COMPILER)
  list(APPEND cfg_args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(BUILD_TYPE)
  list(APPEND cfg_args -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
endif()
step("configure the consumer" ${CMAKE_COMMAND} ${cfg_args})
step("build the consumer" ${CMAKE_COMMAND} --build ${build})
find_program(consumer NAMES openrnn_consumer PATHS ${build} ${build}/Debug ${build}/Release NO_DEFAULT_PATH)
if(NOT consumer)
  message(FATAL_ERROR "the consumer executable was not built")
endif()
step("run the consumer" ${consumer})
message(STATUS "${step_output}")
if(NOT step_output MATCHES "openrnn [0-9]+ cpu handle ok")
  message(FATAL_ERROR "unexpected consumer output: ${step_output}")
endif()
