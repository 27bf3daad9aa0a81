// Optimisers with PyTorch's update rules (torch.optim defaults: no weight decay, no Nesterov, RMSprop not centred):
//   SGD:     buf = momentum * buf + g (buf = g on the first step); p -= lr * buf
//   RMSprop: sq = alpha * sq + (1 - alpha) g^2;                    p -= lr * g / (sqrt(sq) + eps)
//   Adam:    m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;        p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// plus global gradient-norm clipping (torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when below 1)
// and step decay of the learning rate (lr = lr0 * decay^floor(step / every)).
#pragma once

#include <string>
#include <vector>

#include "nn.h"

namespace openrnn::app {

enum class OptimKind { Sgd, RmsProp, Adam };
bool optim_from_name(const std::string& s, OptimKind* out);
const char* optim_name(OptimKind k);

struct OptimConfig {
  OptimKind kind = OptimKind::Adam;
  double lr = 1e-3;
  double momentum = 0.9;   // SGD
  double alpha = 0.99;     // RMSprop
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double clip = 0.0;       // max global gradient norm; 0 = off
  double decay = 1.0;      // multiply lr by this every decay_every steps
  long decay_every = 0;    // 0 = never
};

class Optimizer {
 public:
  Optimizer(Ops& ops, const OptimConfig& cfg, std::vector<Param*> params);
  void zero_grad();
  // Clips (if configured) and updates every parameter. Returns the gradient norm before clipping.
  double step();
  double lr() const;  // at the current step count
  long steps() const { return t_; }
  void set_steps(long t) { t_ = t; }
  const OptimConfig& config() const { return cfg_; }
  const std::vector<Param*>& params() const { return params_; }
  // Names of the state tensors in checkpoints ("exp_avg", "exp_avg_sq", "momentum_buffer", "square_avg"); empty
  // when unused.
  const char* state1_name() const;
  const char* state2_name() const;

 private:
  Ops& ops_;
  OptimConfig cfg_;
  std::vector<Param*> params_;
  long t_ = 0;  // completed steps
};

}  // namespace openrnn::app
