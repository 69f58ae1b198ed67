// Breaks the include rules on purpose: the Vulkan core must know no plan.
#pragma once
#include "planner/plan.h"
