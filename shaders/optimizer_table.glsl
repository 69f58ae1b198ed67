// The optimizer table's lookup, shared by adamw_table*.comp and grad_norm_table*.comp: binding 9
// holds the OptimizerPiece entries, the push constants say which of them this dispatch runs,
// and each workgroup finds the one piece it works on. Groups are laid out 2-D when there are
// more than 65535 (maxComputeWorkGroupCount[0]'s minimum); the flat index is x + y * width.

layout(std430, binding = 9) readonly buffer Table { OptimizerPiece table[]; };
layout(push_constant) uniform Push { OptimizerTableParams p; };

// This workgroup's flat index, or p.groups for a padding group of the 2-D layout.
uint table_group() {
  const uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  return min(g, p.groups);
}

// The entry whose [first, first + groups) holds workgroup g (g < p.groups): the last entry whose
// first group is <= g, by binary search (entries are in group order). FIRST_GROUP names the
// OptimizerPiece member, adamw_group or norm_group.
#define TABLE_FIND(FIRST_GROUP, g)                          \
  {                                                         \
    uint lo = p.first, hi = p.first + p.pieces;             \
    while (hi - lo > 1) {                                   \
      const uint mid = (lo + hi) / 2;                       \
      if (table[mid].FIRST_GROUP <= g) lo = mid; else hi = mid; \
    }                                                       \
    piece = lo;                                             \
  }
