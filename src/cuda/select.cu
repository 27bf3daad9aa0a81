// Which algorithm runs: the algorithms this build holds and the AUTO rule.
//
// AUTO rule (docs/performance.md keeps the measurements): PERSISTENT when it is built and says it supports the
// problem (it only accepts problems whose recurrent weights fit on chip, where it wins by skipping the per-step
// launches and weight reloads), otherwise STANDARD, which supports every problem.
#include "cuda_backend.h"

#if __has_include("persistent_algo.cuh")
#include "persistent_algo.cuh"
#define OPENRNN_HAVE_PERSISTENT 1
#else
#define OPENRNN_HAVE_PERSISTENT 0
#endif

namespace openrnn {
namespace cuda {

AlgoSet make_algos() {
  AlgoSet s;
  s.standard = make_standard_algo();
#if OPENRNN_HAVE_PERSISTENT
  s.persistent = make_persistent_algo();
#endif
  return s;
}

AlgoQuery choose_algo(const AlgoSet& algos, const Context& ctx, const openrnn_rnn_desc& rnn,
                      const openrnn_seq_desc& x, openrnn_fwd_mode mode, openrnn_algo algo) {
  AlgoQuery q;
  switch (algo) {
    case OPENRNN_ALGO_STANDARD:
      q = algos.standard->supports(ctx, rnn, x, mode);
      q.chosen = OPENRNN_ALGO_STANDARD;
      return q;
    case OPENRNN_ALGO_PERSISTENT:
      if (!algos.persistent) {
        q.supported = false;
        q.chosen = OPENRNN_ALGO_PERSISTENT;
        q.reason = "the PERSISTENT algorithm is not part of this build of the CUDA backend";
        return q;
      }
      q = algos.persistent->supports(ctx, rnn, x, mode);
      q.chosen = OPENRNN_ALGO_PERSISTENT;
      return q;
    case OPENRNN_ALGO_AUTO:
    default:
      if (algos.persistent) {
        q = algos.persistent->supports(ctx, rnn, x, mode);
#if OPENRNN_HAVE_PERSISTENT
        if (q.supported && persistent_preferred(rnn, x, mode, ctx.props)) {  // measured rule: persistent_algo.cuh
#else
        if (q.supported) {
#endif
          q.chosen = OPENRNN_ALGO_PERSISTENT;
          return q;
        }
      }
      q = algos.standard->supports(ctx, rnn, x, mode);
      q.chosen = OPENRNN_ALGO_STANDARD;
      return q;
  }
}

}  // namespace cuda
}  // namespace openrnn
