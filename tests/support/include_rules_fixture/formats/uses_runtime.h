// Breaks the include rules on purpose (tests/support/include_rules.cmake must refuse it).
#pragma once
#include <vulkan/vulkan_core.h>

#include "runtime/session.h"
