// Host-side interface of the persistent-kernel lab: type-erased kernel variants, so that the driver (lab_fwd.cu)
// can check and time every compiled instantiation through one loop.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

namespace lab {

enum class DType { F32, BF16, F16 };
inline const char* dtype_name(DType d) { return d == DType::F32 ? "f32" : d == DType::BF16 ? "bf16" : "f16"; }
inline size_t dtype_size(DType d) { return d == DType::F32 ? 4 : 2; }
inline const char* cell_name(int c) { return c == 0 ? "lstm" : c == 1 ? "gru" : c == 2 ? "rnn_tanh" : "rnn_relu"; }

// Device buffers of one problem (all per-direction arrays indexed [dir]). Element types: TW = the storage dtype.
struct DevProblem {
  int cell, T, B, H, D;
  DType dt;
  const float* xproj[2];  // [T, B, G*H] float32
  const void* whh[2];     // [G*H, H] TW
  const float* bx[2];
  const float* bh[2];
  const float* h0[2];
  const float* c0[2];
  void* y;  // [T, B, D*H] TW
  float* hn[2];
  float* cn[2];
  const int* lengths;
  float* hg[2];         // grid mode exchange, [2, B, H] each
  unsigned* flags[2];   // grid mode, [>= 132] each, zeroed by run()
  long long* prof = nullptr;  // optional per-phase clock64 stamps (v2), [16][8]
};

struct Plan {
  bool ok = false;
  std::string why;    // when !ok: the reason, in words
  int C = 0;          // CTAs per group
  int BT = 0;         // batch columns per group
  int groups = 0;     // groups per direction
  size_t smem = 0;    // dynamic shared memory per CTA
  int max_active = 0; // cluster mode: co-resident clusters; grid mode: co-resident CTAs
  int regs = 0, local_bytes = 0;
};

class Variant {
 public:
  virtual ~Variant() = default;
  virtual std::string name() const = 0;
  virtual int cell() const = 0;
  virtual DType dtype() const = 0;
  virtual int H() const = 0;
  virtual bool grid_mode() const = 0;
  virtual Plan plan(int B, int D) const = 0;
  // Stream-ordered: zeroes the flags (grid mode) and launches. Returns the launch error.
  virtual cudaError_t run(const DevProblem& p, const Plan& pl, cudaStream_t s) const = 0;
};

void add_variants_f32(std::vector<std::unique_ptr<Variant>>& v);
void add_variants_bf16(std::vector<std::unique_ptr<Variant>>& v);
void add_variants_f16(std::vector<std::unique_ptr<Variant>>& v);

// Overwrites a buffer larger than L2 (stream-ordered), so that timed calls start with a cold cache.
void l2_flush(cudaStream_t s);

// cuDNN comparator: median µs per call of cudnnRNNForward (inference) with the given algorithm
// (0 standard, 1 persist_static, 2 persist_dynamic, 3 persist_static_small_h); negative when cuDNN refuses.
double cudnn_forward_us(int cell, DType dt, int H, int B, int T, int D, int algo, int reps, std::string* err);

}  // namespace lab
