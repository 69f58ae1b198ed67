// What a training step's optimizer does: AdamW's hyperparameters and the gradient clip. Pure
// C++: the session, the kernels (runtime/kernels/optimizer.h) and the training-state file all
// read this one struct.
#pragma once

namespace remat {

// The one AdamW configuration (OptimizerConfig names it too): torch.optim.AdamW's
// hyperparameters with its defaults, so a training loop ported from PyTorch gets the same
// optimizer without setting anything, plus the max gradient norm of the clip_grad_norm_ that
// usually precedes it. Doubles, like PyTorch's Python floats: 1 - beta2 is formed from these
// before rounding to float. `remat train` keeps its own documented defaults (--lr 3e-4, --wd 0).
struct AdamWConfig {
  double lr = 1e-3;            // learning rate
  double beta1 = 0.9;          // first-moment decay
  double beta2 = 0.999;        // second-moment decay
  double eps = 1e-8;           // denominator epsilon
  double weight_decay = 1e-2;  // decoupled, on 2-D parameters only
  float grad_clip = 0.0f;      // max global gradient norm before the step; 0 = no clipping
};

// AdamW with PyTorch's defaults (lr 1e-3, weight decay 0.01) and optional gradient clipping.
using OptimizerConfig = AdamWConfig;

}  // namespace remat
