#version 450
#extension GL_GOOGLE_include_directive : require
#include "rope_params.h"

// d_in (=|+=) d_out rotated by -angle (rope_body.glsl).
#define ROPE_SIGN -1.0
#include "rope_body.glsl"
