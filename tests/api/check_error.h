// The check every C API error test makes: the status, and a message that is one non-empty line
// naming what went wrong.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "remat/remat.h"

namespace remat::test {

inline void check_error(remat_status got, remat_status want, const std::string& mentions = {}) {
  const std::string message = remat_last_error();
  INFO(remat_status_name(got) << ": " << message);
  CHECK(got == want);
  CHECK(!message.empty());
  CHECK(message.find('\n') == std::string::npos);
  if (!mentions.empty()) CHECK(message.find(mentions) != std::string::npos);
}

}  // namespace remat::test
