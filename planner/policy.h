// Checkpoint policies a user can name. `auto` needs a byte budget; the others may take one as a
// check ("this fixed policy must fit").
#pragma once

#include <string>
#include <string_view>

namespace remat {

struct Policy {
  enum class Kind {
    none,   // store every activation: no recompute
    every,  // keep the input of every interval-th transformer block (textbook interval I)
    sqrt,   // every:round(sqrt(L)) (Chen et al. 2016, "Training deep nets with sublinear memory")
    selective,  // keep matmul/attention outputs, recompute the cheap ops (Korthikanti et al. 2022)
    automatic,  // least predicted time whose arena fits the budget
  };
  Kind kind = Kind::none;  // which policy
  int interval = 0;        // every:K only, K >= 1

  // "none", "every:K", "sqrt", "selective", "auto"; anything else is std::invalid_argument.
  static Policy parse(std::string_view text);
  std::string to_string() const;
  bool operator==(const Policy&) const = default;
};

}  // namespace remat
