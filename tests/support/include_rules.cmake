# The include rules between remat's folders (docs/DESIGN.md, "Layout"), checked over every source
# file: the pure folders (base, text, graph, planner, formats) never include Vulkan, volk or
# anything of runtime/; runtime/vulkan knows no model, plan or file format; only api/ and
# samples/ include the public C and C++ API or the CLI. This table is the rule; the design doc
# describes it.
#
#   cmake -DROOT=<source tree> -P include_rules.cmake
#
# Prints one line per broken rule and fails; tests/CMakeLists.txt runs it on the tree and on a
# fixture that breaks it on purpose.

# "folder|prefixes": the files directly in `folder` may include (quoted) only paths that start
# with one of the comma-separated prefixes. formats/ reads text/ because a GGUF file carries a
# tokenizer and a chat template (formats/gguf_tokenizer); text/ knows no file container. A bare name ("optimizer_params.h") is a shader
# interface header from shaders/, allowed where shaders/ is.
set(rules
  "base|base/"
  "text|base/,text/"
  "graph|base/,graph/"
  "planner|base/,graph/,planner/,shaders/"
  "formats|base/,graph/,planner/,text/,formats/"
  "runtime/vulkan|base/,runtime/vulkan/,remat_shaders/"
  "runtime/kernels|base/,graph/,planner/,runtime/vulkan/,runtime/kernels/,remat_shaders/,shaders/"
  "runtime|base/,graph/,planner/,formats/,runtime/,remat_shaders/,shaders/"
  "api|base/,graph/,planner/,formats/,text/,runtime/,remat_shaders/,remat/,api/")
# Folders that must not include a Vulkan or volk header by any spelling.
set(pure_folders base text graph planner formats)

cmake_policy(SET CMP0057 NEW)
if(NOT ROOT)
  message(FATAL_ERROR "give -DROOT=<source tree>")
endif()
set(broken 0)
foreach(rule IN LISTS rules)
  string(REPLACE "|" ";" parts "${rule}")
  list(GET parts 0 folder)
  list(GET parts 1 allowed)
  string(REPLACE "," ";" allowed "${allowed}")
  file(GLOB files ${ROOT}/${folder}/*.h ${ROOT}/${folder}/*.cpp ${ROOT}/${folder}/*.hpp)
  list(FIND pure_folders ${folder} pure)
  foreach(file IN LISTS files)
    file(RELATIVE_PATH name ${ROOT} ${file})
    file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include")
    foreach(line IN LISTS lines)
      if(line MATCHES "#[ \t]*include[ \t]*\"([^\"]+)\"")
        set(target ${CMAKE_MATCH_1})
        set(ok FALSE)
        if(NOT target MATCHES "/")
          # A bare name: a shader interface header (shaders/ is an include directory).
          if("shaders/" IN_LIST allowed)
            set(ok TRUE)
          endif()
        else()
          foreach(prefix IN LISTS allowed)
            string(FIND "${target}" "${prefix}" at)
            if(at EQUAL 0)
              set(ok TRUE)
            endif()
          endforeach()
        endif()
        if(target MATCHES "^(tests|samples)/")
          set(ok FALSE)
        endif()
        if(NOT ok)
          string(REPLACE ";" ", " allowed_text "${allowed}")
          message("include rule: ${name} includes \"${target}\"; ${folder}/ may include only ${allowed_text}")
          math(EXPR broken "${broken} + 1")
        endif()
      elseif(pure GREATER -1 AND line MATCHES "#[ \t]*include[ \t]*<(vulkan/[^>]*|volk[^>]*)>")
        message("include rule: ${name} includes <${CMAKE_MATCH_1}>; ${folder}/ is pure C++ and never includes Vulkan")
        math(EXPR broken "${broken} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
if(broken GREATER 0)
  message(FATAL_ERROR "${broken} include(s) break the folder rules")
endif()
message(STATUS "include rules hold under ${ROOT}")
