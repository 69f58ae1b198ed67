// `remat ops`: the operand contract of every op kind (graph/op_schema.h), as a plain listing or,
// with --markdown, as the table docs/ops.md carries.
#include <cstdio>
#include <string>

#include "cli_args.h"
#include "commands.h"
#include "graph/op_schema.h"

namespace remat::cli {
namespace {

std::string names(std::span<const OperandSpec> list) {
  std::string s;
  for (const OperandSpec& o : list) {
    s += (s.empty() ? "" : ", ") + std::string(o.name);
    if (o.presence == OperandSpec::Presence::variadic)
      s += "...";
    else if (o.presence != OperandSpec::Presence::required)
      s += "?";
  }
  return s;
}

}  // namespace

int run_ops(const std::vector<std::string>& argv) {
  const CommandSpec spec{
      "ops",
      "",
      0,
      "Lists each op kind's named inputs and outputs ('?': present when the op has a bias or\n"
      "its weight is trained, '...': any number), as graph/op_schema.h declares them.\n",
      {{"--markdown", "", "print docs/ops.md's operand table", ""}}};
  if (print_help_if_requested(argv, spec)) return 0;
  Args args(argv, spec);
  if (args.has("--markdown")) {
    std::fputs(op_schema_markdown().c_str(), stdout);
    return 0;
  }
  for (const OpSchema& s : kOpSchemas)
    std::printf("%-24s %s -> %s\n", std::string(op_kind_name(s.kind)).c_str(),
                names(s.inputs).c_str(), names(s.outputs).c_str());
  return 0;
}

}  // namespace remat::cli
