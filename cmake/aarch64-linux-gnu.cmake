# Cross compiling remat for 64-bit Arm Linux on a Debian x86-64 host (.ci/cross-aarch64 sets it up):
#   cmake -S . -B build-aarch64 --toolchain cmake/aarch64-linux-gnu.cmake
# Debian installs arm64 libraries side by side with the host's (multiarch): libraries under
# /usr/lib/aarch64-linux-gnu, headers in the shared /usr/include, the C/C++ runtime under
# /usr/aarch64-linux-gnu. There is no separate sysroot, so the search roots are that directory and
# /, and CMAKE_LIBRARY_ARCHITECTURE keeps find_library in the arm64 directories.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
# Build tools (glslangValidator) run on the host; libraries, headers and CMake packages must be the
# target's. Catch2 2.13 is header-only and its package is architecture-independent, so the host's
# /usr/lib/cmake/Catch2 serves the arm64 build.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Without binfmt_misc (containers) the host cannot run arm64 programs by itself: ctest and Catch2's
# test discovery go through qemu. With Debian's libc6:arm64 installed the arm64 loader is at its
# usual path and loads the multiarch libraries, all of one glibc build; otherwise qemu takes the
# loader and libc of the cross toolchain's runtime (-L).
find_program(REMAT_QEMU_AARCH64 qemu-aarch64)
if(REMAT_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${REMAT_QEMU_AARCH64})
  if(NOT EXISTS /lib/ld-linux-aarch64.so.1)
    list(APPEND CMAKE_CROSSCOMPILING_EMULATOR -L /usr/aarch64-linux-gnu)
  endif()
endif()
