// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel random
// numbers: as easy as 1, 2, 3" (SC'11): 10 rounds of 32x32->64-bit multiplies and xors with a
// Weyl-sequence key schedule. A pure function of (counter, key), so a recomputed forward and the
// backward regenerate exactly the same numbers without storing them. Uses only 32-bit integer
// operations (umulExtended gives the 64-bit product), which every Vulkan device has. The host
// copy in tests/reference/dropout.cpp is checked against the Random123 known-answer vectors.

const uint PHILOX_M0 = 0xD2511F53u;
const uint PHILOX_M1 = 0xCD9E8D57u;
const uint PHILOX_W0 = 0x9E3779B9u;  // golden ratio
const uint PHILOX_W1 = 0xBB67AE85u;  // sqrt(3) - 1

uvec4 philox4x32_10(uvec4 ctr, uvec2 key) {
  for (int round = 0; round < 10; ++round) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(PHILOX_M0, ctr.x, hi0, lo0);
    umulExtended(PHILOX_M1, ctr.z, hi1, lo1);
    ctr = uvec4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
    key += uvec2(PHILOX_W0, PHILOX_W1);
  }
  return ctr;
}
