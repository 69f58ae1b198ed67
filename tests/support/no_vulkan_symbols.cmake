# cmake -DNM=nm "-DLIBRARIES=libremat_runtime.a;libremat_graph.a" -P no_vulkan_symbols.cmake
# Fails when a library defines a global symbol named like a Vulkan function (vkFoo), which would
# clash with, or silently replace, libvulkan's or an application's volk.
foreach(library IN LISTS LIBRARIES)
  execute_process(COMMAND ${NM} -g --defined-only ${library} OUTPUT_VARIABLE symbols
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${library}")
  endif()
  # The listing must hold remat's own symbols, or the check below proves nothing.
  if(NOT symbols MATCHES "_ZN5remat")
    message(FATAL_ERROR "${library} defines no remat symbol: not one of remat's libraries?")
  endif()
  string(REGEX MATCHALL "[ \t][A-Za-z][ \t]vk[A-Z][A-Za-z0-9_]*" vulkan "${symbols}")
  if(vulkan)
    list(JOIN vulkan "," names)
    message(FATAL_ERROR "${library} defines global Vulkan symbols:${names}")
  endif()
  message(STATUS "${library}: no global Vulkan symbol")
endforeach()
