// Placeholder so the library links while the CPU backend is written (replaced by src/cpu/ proper).
#include "backend.h"
#include "error.h"

namespace openrnn {
namespace {
class CpuBackend final : public Backend {
 public:
  AlgoQuery query_algo(const openrnn_rnn_desc&, const openrnn_seq_desc&, openrnn_fwd_mode, openrnn_algo) const override {
    AlgoQuery q;
    q.supported = true;
    return q;
  }
  TempSizes temp_sizes(const openrnn_rnn_desc&, const openrnn_seq_desc&, openrnn_fwd_mode) const override { return {}; }
  void forward(const openrnn_rnn_desc&, const openrnn_seq_desc&, const ForwardArgs&) override {
    not_supported("CPU forward: under construction");
  }
  void backward_data(const openrnn_rnn_desc&, const openrnn_seq_desc&, const BackwardDataArgs&) override {
    not_supported("CPU backward_data: under construction");
  }
  void backward_weights(const openrnn_rnn_desc&, const openrnn_seq_desc&, const BackwardWeightsArgs&) override {
    not_supported("CPU backward_weights: under construction");
  }
};
}  // namespace
std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }
}  // namespace openrnn
