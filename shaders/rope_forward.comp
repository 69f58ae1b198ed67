#version 450
#extension GL_GOOGLE_include_directive : require
#include "rope_params.h"

// out = in rotated by +angle (rope_body.glsl).
#define ROPE_SIGN 1.0
#include "rope_body.glsl"
