// The JSON reader lives in base/; this header forwards to it for sources not yet moved over.
#pragma once

#include "base/json.h"
