#include "optim.h"

#include <cmath>

namespace openrnn::app {

bool optim_from_name(const std::string& s, OptimKind* out) {
  if (s == "sgd") *out = OptimKind::Sgd;
  else if (s == "rmsprop") *out = OptimKind::RmsProp;
  else if (s == "adam") *out = OptimKind::Adam;
  else return false;
  return true;
}
const char* optim_name(OptimKind k) {
  switch (k) {
    case OptimKind::Sgd: return "sgd";
    case OptimKind::RmsProp: return "rmsprop";
    case OptimKind::Adam: return "adam";
  }
  return "?";
}

Optimizer::Optimizer(Ops& ops, const OptimConfig& cfg, std::vector<Param*> params)
    : ops_(ops), cfg_(cfg), params_(std::move(params)) {
  for (Param* p : params_) {
    if (state1_name()[0]) p->state1 = DevArray<float>(ops, p->size());
    if (state2_name()[0]) p->state2 = DevArray<float>(ops, p->size());
  }
}

const char* Optimizer::state1_name() const {
  switch (cfg_.kind) {
    case OptimKind::Sgd: return cfg_.momentum != 0 ? "momentum_buffer" : "";
    case OptimKind::RmsProp: return "square_avg";
    case OptimKind::Adam: return "exp_avg";
  }
  return "";
}
const char* Optimizer::state2_name() const { return cfg_.kind == OptimKind::Adam ? "exp_avg_sq" : ""; }

void Optimizer::zero_grad() {
  for (Param* p : params_) p->grad.zero();
}

double Optimizer::lr() const {
  if (cfg_.decay_every <= 0 || cfg_.decay == 1.0) return cfg_.lr;
  return cfg_.lr * std::pow(cfg_.decay, static_cast<double>(t_ / cfg_.decay_every));
}

double Optimizer::step() {
  double sq = 0;
  for (Param* p : params_) sq += ops_.sum_squares(p->grad.get(), p->size());
  const double norm = std::sqrt(sq);
  if (cfg_.clip > 0) {
    const double coef = cfg_.clip / (norm + 1e-6);
    if (coef < 1.0)
      for (Param* p : params_) ops_.scale(p->grad.get(), p->size(), static_cast<float>(coef));
  }
  const float rate = static_cast<float>(lr());
  const long t = t_ + 1;
  for (Param* p : params_) {
    switch (cfg_.kind) {
      case OptimKind::Sgd:
        ops_.sgd_step(p->value.get(), p->grad.get(), p->state1.get(), p->size(), rate,
                      static_cast<float>(cfg_.momentum), t == 1);
        break;
      case OptimKind::RmsProp:
        ops_.rmsprop_step(p->value.get(), p->grad.get(), p->state1.get(), p->size(), rate, cfg_.alpha,
                          static_cast<float>(cfg_.eps));
        break;
      case OptimKind::Adam: {
        const double bc1 = 1.0 - std::pow(cfg_.beta1, static_cast<double>(t));
        const double bc2 = 1.0 - std::pow(cfg_.beta2, static_cast<double>(t));
        ops_.adam_step(p->value.get(), p->grad.get(), p->state1.get(), p->state2.get(), p->size(), rate,
                       cfg_.beta1, cfg_.beta2, static_cast<float>(cfg_.eps), bc1, bc2);
        break;
      }
    }
  }
  t_ = t;
  return norm;
}

}  // namespace openrnn::app
