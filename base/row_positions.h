// Position ids of packed rows: several examples share a row of T tokens, and each token carries
// its position in its own example. A row's positions are 0, 1, 2, ... restarting at 0 where the
// next example starts, so position 0 marks an example's first token and the position alone says
// where a token's example began: at row position t - positions[t]. The graph reads them as its
// `positions` input (graph/model_config.h TrainShape::packed): RoPE and GPT-2's learned position
// table take them as the token's position, and attention lets token t see tokens
// t - positions[t] .. t of its row only (shaders/attention_params.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace remat {

// Empty when `positions` is rows of `seq` valid position ids: each row starts at 0 and every id
// is 0 or its predecessor + 1; otherwise why not (the first bad index and its value).
std::string row_positions_error(std::span<const uint32_t> positions, int seq);

// Plain rows' positions: 0 .. T-1 in every row, what an unpacked row's tokens have.
void fill_plain_positions(std::span<uint32_t> positions, int seq);

}  // namespace remat
