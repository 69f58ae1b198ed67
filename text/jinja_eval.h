// Renders a parsed Jinja template (text/jinja_parser.h) with the semantics of Hugging Face's
// @huggingface/jinja. Filters and methods are those chat templates use (text/chat_template.h).
#pragma once

#include <string>

#include "text/jinja_parser.h"
#include "text/jinja_value.h"

namespace remat::jinja {

// `variables` become the template's globals next to namespace() and raise_exception().
// Throws std::invalid_argument "line L, column C: ..." for an unsupported filter, method or
// operation, and for raise_exception("...") with the template's message.
std::string render(const Nodes& program, const Dict& variables);

}  // namespace remat::jinja
