// The boundary between the C API and the C++ library: every entry point runs its body through
// guarded(), which turns any exception into a remat_status and the thread's last-error message,
// so that nothing thrown inside remat ever unwinds into C, Swift, Kotlin or Rust frames.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "remat/remat.h"

namespace remat::capi {

// An error the API itself detects, with the status it maps to.
class ApiError : public std::runtime_error {
 public:
  ApiError(remat_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  remat_status status() const { return status_; }

 private:
  remat_status status_;
};

// Shorthands for the checks every entry point makes on its arguments.
[[noreturn]] void invalid(const std::string& message);
void require(bool ok, const char* message);
// "params-><field> is <value>; it must be <range>" unless ok.
void require_range(bool ok, const char* field, double value, const char* range);
// Output structs start with struct_size; it must be one the library knows.
template <class T>
void require_struct(const T* s, const char* what) {
  if (s == nullptr) invalid(std::string(what) + " is NULL");
  if (s->struct_size != sizeof(T))
    invalid(std::string(what) + "->struct_size is " + std::to_string(s->struct_size) +
            ", this library expects " + std::to_string(sizeof(T)) + " (sizeof " + what +
            " in remat " REMAT_VERSION_STRING ")");
}

// The status an in-flight exception maps to; records its message as the last error.
remat_status status_from_current_exception() noexcept;
// Clears the last error (every call starts with it).
void clear_error() noexcept;
// Records `message` as the last error and returns `status`.
remat_status fail(remat_status status, const char* message) noexcept;

template <class F>
remat_status guarded(F&& body) noexcept {
  clear_error();
  try {
    std::forward<F>(body)();
    return REMAT_OK;
  } catch (...) {
    return status_from_current_exception();
  }
}

// Copies `text` into a fixed char array, truncating, always NUL-terminated.
template <std::size_t N>
void copy_text(char (&out)[N], const std::string& text) {
  const std::size_t n = text.size() < N - 1 ? text.size() : N - 1;
  text.copy(out, n);
  out[n] = '\0';
}

}  // namespace remat::capi
