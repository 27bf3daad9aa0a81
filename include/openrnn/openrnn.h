/*
 * openrnn: recurrent networks (LSTM, GRU, RNN-tanh/relu) on CPUs and NVIDIA GPUs.
 *
 * The one public C header. Every call returns an openrnn_status; on failure nothing was written to any output
 * buffer and openrnn_last_error() holds a message that names the offending argument.
 *
 * Conventions used in every comment below:
 *   T  time steps (max_seq_len of the sequence descriptor)     B  batch
 *   I  input size     H  hidden size     P  projection size (LSTM only; Hout = P when P > 0, else H)
 *   G  gates: LSTM 4 (i f g o), GRU 3 (r z n), RNN 1          L  layers     D  directions (1 or 2)
 *   Shapes are written [T, B, I] (first index slowest). "elements" are of the descriptor's data type.
 *
 * Memory: for a CPU handle every pointer is host memory; for a CUDA handle every tensor pointer (x, y, states,
 * weights, workspace, reserve) is device memory, and the calls are asynchronous on the handle's stream. Plain
 * parameters (descriptors, sizes, the host sequence-length array) are host memory and are copied before return.
 *
 * Threads: one handle must not be used by two threads at the same time. Descriptors are immutable after creation
 * (except openrnn_set_dropout_offset) and may be shared by threads. openrnn_last_error() is per thread.
 */
#ifndef OPENRNN_OPENRNN_H
#define OPENRNN_OPENRNN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(OPENRNN_SHARED)
#ifdef OPENRNN_BUILDING
#define OPENRNN_API __declspec(dllexport)
#else
#define OPENRNN_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define OPENRNN_API __attribute__((visibility("default")))
#else
#define OPENRNN_API
#endif

/* ---------------------------------------------------------------------------------------------------------------
 * Version
 * ------------------------------------------------------------------------------------------------------------- */
#define OPENRNN_VERSION_MAJOR 0
#define OPENRNN_VERSION_MINOR 1
#define OPENRNN_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH of the header; compare with openrnn_version() of the library. */
#define OPENRNN_VERSION (OPENRNN_VERSION_MAJOR * 10000 + OPENRNN_VERSION_MINOR * 100 + OPENRNN_VERSION_PATCH)

/* The version of the library actually linked, in the same encoding as OPENRNN_VERSION. */
OPENRNN_API int openrnn_version(void);

/* ---------------------------------------------------------------------------------------------------------------
 * Status and errors
 * ------------------------------------------------------------------------------------------------------------- */
typedef enum openrnn_status {
  OPENRNN_STATUS_SUCCESS = 0,
  OPENRNN_STATUS_BAD_PARAM = 1,             /* an argument is invalid (null, out of range, inconsistent) */
  OPENRNN_STATUS_NOT_SUPPORTED = 2,         /* valid, but this backend/algorithm cannot do it (see message) */
  OPENRNN_STATUS_WORKSPACE_TOO_SMALL = 3,   /* workspace_bytes below the size query's answer */
  OPENRNN_STATUS_RESERVE_TOO_SMALL = 4,     /* reserve_bytes below the size query's answer */
  OPENRNN_STATUS_WEIGHTS_SIZE_MISMATCH = 5, /* weight_bytes differs from openrnn_get_weight_space_size */
  OPENRNN_STATUS_ALLOC_FAILED = 6,          /* a descriptor or handle could not be allocated */
  OPENRNN_STATUS_NO_DEVICE = 7,             /* the requested device does not exist or was not compiled in */
  OPENRNN_STATUS_CUDA_ERROR = 8,            /* a CUDA runtime, cuBLAS or kernel-launch call failed */
  OPENRNN_STATUS_BLAS_ERROR = 9,            /* the CPU BLAS failed */
  OPENRNN_STATUS_INTERNAL_ERROR = 10        /* a bug in openrnn; please report the message */
} openrnn_status;

/* A static English name for a status, e.g. "OPENRNN_STATUS_BAD_PARAM". Never null. */
OPENRNN_API const char* openrnn_status_string(openrnn_status status);

/* The message of the last failed call on this thread ("" if none). Valid until the next openrnn call on this
 * thread. Never null. */
OPENRNN_API const char* openrnn_last_error(void);

/* ---------------------------------------------------------------------------------------------------------------
 * Enumerations
 * ------------------------------------------------------------------------------------------------------------- */
typedef enum openrnn_device {
  OPENRNN_DEVICE_CPU = 0,
  OPENRNN_DEVICE_CUDA = 1
} openrnn_device;

typedef enum openrnn_cell {
  OPENRNN_CELL_LSTM = 0,             /* gates i f g o */
  OPENRNN_CELL_GRU = 1,              /* r z n, linear-before-reset (cuDNN, PyTorch, Keras reset_after=True) */
  OPENRNN_CELL_GRU_RESET_BEFORE = 2, /* r z n, reset applied to h before W_hn (Keras reset_after=False) */
  OPENRNN_CELL_RNN_TANH = 3,
  OPENRNN_CELL_RNN_RELU = 4
} openrnn_cell;

typedef enum openrnn_bias_mode {
  OPENRNN_BIAS_DOUBLE = 0,          /* bias_ih and bias_hh (PyTorch, cuDNN default) */
  OPENRNN_BIAS_SINGLE_INPUT = 1,    /* bias_ih only */
  OPENRNN_BIAS_SINGLE_RECURRENT = 2,/* bias_hh only */
  OPENRNN_BIAS_NONE = 3
} openrnn_bias_mode;

typedef enum openrnn_data_type {
  OPENRNN_DATA_FLOAT = 0,    /* float32 storage and arithmetic */
  OPENRNN_DATA_DOUBLE = 1,   /* float64 storage and arithmetic */
  OPENRNN_DATA_HALF = 2,     /* IEEE float16 storage, float32 arithmetic and accumulation */
  OPENRNN_DATA_BFLOAT16 = 3  /* bfloat16 storage, float32 arithmetic and accumulation */
} openrnn_data_type;

typedef enum openrnn_math_mode {
  OPENRNN_MATH_DEFAULT = 0,     /* strict: float32 products in float32 (no TF32); 16-bit types keep the recurrent
                                   state float32-accurate through every product (docs/numerics.md) */
  OPENRNN_MATH_ALLOW_TF32 = 1,  /* float32 GEMMs may use TF32 tensor cores (GPU; ignored on CPU) */
  OPENRNN_MATH_ALLOW_REDUCED_STATE = 2 /* float16/bfloat16: the recurrent product may take h rounded to the storage
                                   type, as cuDNN does (GPU STANDARD; c and the pointwise arithmetic stay float32).
                                   Ignored by the CPU and PERSISTENT, and for float32/float64 (docs/numerics.md) */
} openrnn_math_mode;

typedef enum openrnn_algo {
  OPENRNN_ALGO_AUTO = 0,        /* the backend picks by a documented, measured rule (docs/performance.md) */
  OPENRNN_ALGO_STANDARD = 1,    /* one input GEMM per layer and direction, per-step recurrent GEMM + pointwise */
  OPENRNN_ALGO_PERSISTENT = 2   /* GPU: recurrent weights kept on chip for all steps (see openrnn_query_algo) */
} openrnn_algo;

typedef enum openrnn_layout {
  OPENRNN_LAYOUT_SEQ_MAJOR = 0,   /* x is [T, B, V] (PyTorch batch_first=False) */
  OPENRNN_LAYOUT_BATCH_MAJOR = 1  /* x is [B, T, V] (PyTorch batch_first=True, Keras) */
} openrnn_layout;

typedef enum openrnn_fwd_mode {
  OPENRNN_FWD_INFERENCE = 0,  /* the reserve space is not used (may be null) */
  OPENRNN_FWD_TRAINING = 1    /* writes the reserve space that backward_data / backward_weights read */
} openrnn_fwd_mode;

typedef enum openrnn_wgrad_mode {
  OPENRNN_WGRAD_SET = 0,  /* dweights = gradient */
  OPENRNN_WGRAD_ADD = 1   /* dweights += gradient (accumulate over batches) */
} openrnn_wgrad_mode;

/* The kind of a canonical weight tensor (PyTorch names in brackets). */
typedef enum openrnn_weight_kind {
  OPENRNN_WEIGHT_IH = 0,  /* [G*H, I_l]      (weight_ih_l{l}) */
  OPENRNN_WEIGHT_HH = 1,  /* [G*H, Hout]     (weight_hh_l{l}) */
  OPENRNN_BIAS_IH = 2,    /* [G*H]           (bias_ih_l{l}) */
  OPENRNN_BIAS_HH = 3,    /* [G*H]           (bias_hh_l{l}) */
  OPENRNN_WEIGHT_HR = 4   /* [P, H]          (weight_hr_l{l}, LSTM projection only) */
} openrnn_weight_kind;

/* ---------------------------------------------------------------------------------------------------------------
 * Handle: one per device (and, for CPU, per thread that calls concurrently).
 * ------------------------------------------------------------------------------------------------------------- */
typedef struct openrnn_handle* openrnn_handle_t;

/* Creates a handle. device: CPU or CUDA. ordinal: CUDA device index (must be 0 for CPU).
 * *out: receives the handle; not null. A CUDA handle starts on the default stream (null); a CPU handle starts with
 * as many threads as the machine has cores (OPENRNN_NUM_THREADS in the environment overrides).
 * Returns NO_DEVICE if CUDA support was not compiled in or the ordinal does not exist. */
OPENRNN_API openrnn_status openrnn_create_handle(openrnn_handle_t* out, openrnn_device device, int ordinal);
/* Destroys a handle; null is allowed and does nothing. Pending GPU work on its stream is not waited for. */
OPENRNN_API openrnn_status openrnn_destroy_handle(openrnn_handle_t handle);
OPENRNN_API openrnn_status openrnn_get_handle_device(openrnn_handle_t handle, openrnn_device* device, int* ordinal);

/* CUDA handles: stream is a cudaStream_t (null = legacy default stream). BAD_PARAM on a CPU handle. */
OPENRNN_API openrnn_status openrnn_set_stream(openrnn_handle_t handle, void* stream);
OPENRNN_API openrnn_status openrnn_get_stream(openrnn_handle_t handle, void** stream);

/* CPU handles: threads used by the pointwise loops and the BLAS (1..1024). BAD_PARAM on a CUDA handle. */
OPENRNN_API openrnn_status openrnn_set_num_threads(openrnn_handle_t handle, int num_threads);
OPENRNN_API openrnn_status openrnn_get_num_threads(openrnn_handle_t handle, int* num_threads);

/* ---------------------------------------------------------------------------------------------------------------
 * RNN descriptor: the model's shape and numerics.
 * ------------------------------------------------------------------------------------------------------------- */
typedef struct openrnn_rnn_desc* openrnn_rnn_desc_t;

typedef struct openrnn_rnn_config {
  openrnn_cell cell;
  int input_size;           /* I >= 1 */
  int hidden_size;          /* H >= 1 */
  int proj_size;            /* P: 0 = no projection; LSTM only, 1 <= P < H */
  int num_layers;           /* L >= 1 */
  int bidirectional;        /* 0: D = 1; 1: D = 2 */
  openrnn_bias_mode bias_mode;
  openrnn_data_type data_type;
  openrnn_math_mode math_mode;
  openrnn_algo algo;
  double cell_clip;         /* LSTM only: c' is clipped to [-cell_clip, cell_clip] when > 0; 0 = off */
  double dropout;           /* probability 0 <= p < 1 of zeroing a layer's input for layers 1..L-1, training only */
  uint64_t dropout_seed;    /* Philox key (docs/numerics.md) */
} openrnn_rnn_config;

/* Fills *config with defaults: LSTM, I = H = 1, no projection, 1 layer, unidirectional, double bias, float32,
 * strict math, AUTO algorithm, no clipping, no dropout, seed 0. config: not null. */
OPENRNN_API openrnn_status openrnn_rnn_config_init(openrnn_rnn_config* config);

/* Validates *config (BAD_PARAM naming the field) and creates a descriptor that copies it. out, config: not null. */
OPENRNN_API openrnn_status openrnn_create_rnn_desc(openrnn_rnn_desc_t* out, const openrnn_rnn_config* config);
/* null allowed. */
OPENRNN_API openrnn_status openrnn_destroy_rnn_desc(openrnn_rnn_desc_t desc);
/* Copies the descriptor's configuration into *config. */
OPENRNN_API openrnn_status openrnn_get_rnn_config(openrnn_rnn_desc_t desc, openrnn_rnn_config* config);

/* Dropout masks are a pure function of (dropout_seed, offset, layer, t, b, unit). A trainer advances the offset
 * between iterations (e.g. by 1) to draw fresh masks. The offset in force during openrnn_forward(TRAINING) must
 * still be in force for the backward_data / backward_weights calls that use its reserve space. Default 0. */
OPENRNN_API openrnn_status openrnn_set_dropout_offset(openrnn_rnn_desc_t desc, uint64_t offset);
OPENRNN_API openrnn_status openrnn_get_dropout_offset(openrnn_rnn_desc_t desc, uint64_t* offset);

/* ---------------------------------------------------------------------------------------------------------------
 * Sequence descriptor: a padded batch of sequences and their lengths.
 * ------------------------------------------------------------------------------------------------------------- */
typedef struct openrnn_seq_desc* openrnn_seq_desc_t;

/* Creates the descriptor of x: layout [T, B, V] or [B, T, V] with V = vector_size (= I of the RNN descriptor).
 * y then has the same layout, T, B and lengths, and vector size D * Hout.
 * seq_lengths: host array of B lengths, each in 1..max_seq_len, in any order; null = every sequence has length T.
 *   Copied. Steps at and after a sequence's length are padding: never read from x, and written with
 *   padding_fill in y (and dx).
 * data_type must equal the RNN descriptor's when the two are used together. */
OPENRNN_API openrnn_status openrnn_create_seq_desc(openrnn_seq_desc_t* out, openrnn_data_type data_type,
                                                   openrnn_layout layout, int max_seq_len, int batch_size,
                                                   int vector_size, const int32_t* seq_lengths,
                                                   double padding_fill);
OPENRNN_API openrnn_status openrnn_destroy_seq_desc(openrnn_seq_desc_t desc);
/* Any output pointer may be null (not wanted). seq_lengths, when not null, receives B lengths. */
OPENRNN_API openrnn_status openrnn_get_seq_desc(openrnn_seq_desc_t desc, openrnn_data_type* data_type,
                                                openrnn_layout* layout, int* max_seq_len, int* batch_size,
                                                int* vector_size, int32_t* seq_lengths, double* padding_fill);

/* ---------------------------------------------------------------------------------------------------------------
 * Weights: one buffer holding the canonical (PyTorch) tensors back to back, in this order:
 *   for layer l in 0..L-1, for direction d in 0..D-1:
 *     weight_ih [G*H, I_l], weight_hh [G*H, Hout], bias_ih [G*H], bias_hh [G*H], weight_hr [P, H]
 *   where I_0 = I and I_l = D * Hout, absent biases (per bias mode) and weight_hr (no projection) are left out,
 *   rows are in gate order (LSTM i f g o, GRU r z n), row-major. The buffer is not opaque: read and write it.
 * ------------------------------------------------------------------------------------------------------------- */
typedef struct openrnn_weight_param {
  char name[48];              /* PyTorch name, e.g. "weight_ih_l0", "bias_hh_l1_reverse" */
  int layer;                  /* 0..L-1 */
  int direction;              /* 0 forward, 1 reverse */
  openrnn_weight_kind kind;
  size_t offset;              /* in elements from the start of the weight buffer */
  size_t offset_bytes;        /* offset * element size */
  int rows;                   /* first dimension */
  int cols;                   /* second dimension; 1 for a bias (shape [rows]) */
} openrnn_weight_param;

/* Bytes of the weight buffer. handle: any valid handle (the size does not depend on the device). */
OPENRNN_API openrnn_status openrnn_get_weight_space_size(openrnn_handle_t handle, openrnn_rnn_desc_t rnn,
                                                         size_t* bytes);
/* Number of canonical tensors in the buffer (those present under the bias mode and projection). */
OPENRNN_API openrnn_status openrnn_get_weight_param_count(openrnn_rnn_desc_t rnn, int* count);
/* The index-th tensor (0 <= index < count) in buffer order. */
OPENRNN_API openrnn_status openrnn_get_weight_param(openrnn_rnn_desc_t rnn, int index, openrnn_weight_param* param);
/* The tensor of a given layer, direction and kind. NOT_SUPPORTED (with *param zeroed) if it is absent under this
 * descriptor (a bias under BIAS_NONE, weight_hr without projection); BAD_PARAM if layer/direction is out of range. */
OPENRNN_API openrnn_status openrnn_get_weight_params(openrnn_rnn_desc_t rnn, int layer, int direction,
                                                     openrnn_weight_kind kind, openrnn_weight_param* param);

/* ---------------------------------------------------------------------------------------------------------------
 * Temporary buffers
 * ------------------------------------------------------------------------------------------------------------- */
/* Sizes for the given mode and input. workspace: scratch for any one call (forward, backward_data or
 * backward_weights) of this problem on this handle; its contents need not survive between calls.
 * reserve: written by forward(TRAINING), read and modified by backward_data, read by backward_weights; 0 for
 * INFERENCE. Either output pointer may be null (not wanted). Sizes depend on the handle's device and algorithm. */
OPENRNN_API openrnn_status openrnn_get_temp_space_sizes(openrnn_handle_t handle, openrnn_rnn_desc_t rnn,
                                                        openrnn_fwd_mode mode, openrnn_seq_desc_t x_desc,
                                                        size_t* workspace_bytes, size_t* reserve_bytes);

/* ---------------------------------------------------------------------------------------------------------------
 * Algorithms
 * ------------------------------------------------------------------------------------------------------------- */
/* Whether `algo` can run this problem on this handle. *supported = 1 or 0; when 0 and reason is not null,
 * a sentence saying why (e.g. "H=3072 float32 needs 144 MB on chip, this GPU has 61 MB") is copied into
 * reason[0..reason_len-1], NUL-terminated and truncated. For AUTO, *chosen (may be null) receives the algorithm
 * AUTO would run. Returns SUCCESS whenever the arguments are valid, supported or not. */
OPENRNN_API openrnn_status openrnn_query_algo(openrnn_handle_t handle, openrnn_rnn_desc_t rnn,
                                              openrnn_fwd_mode mode, openrnn_seq_desc_t x_desc, openrnn_algo algo,
                                              int* supported, openrnn_algo* chosen, char* reason,
                                              size_t reason_len);

/* ---------------------------------------------------------------------------------------------------------------
 * Compute. Tensors (device memory for a CUDA handle, host memory for a CPU handle), all of the data type:
 *   x   [T, B, I] or [B, T, I] (per x_desc layout)              read; not null
 *   y   [T, B, D*Hout] or [B, T, D*Hout]                          written; not null; padding steps = padding_fill
 *   hx  [L*D, B, Hout]  initial hidden state, index l*D + d       read; null = zeros
 *   cx  [L*D, B, H]     initial cell state (LSTM only)            read; null = zeros; must be null for other cells
 *   hy  [L*D, B, Hout]  final hidden state, at each sequence's own last step (the reverse direction: at t = 0)
 *   cy  [L*D, B, H]     final cell state (LSTM only)              written; null = not wanted
 *   weights             the weight buffer, weight_bytes long      read; not null
 * Outputs must not overlap inputs or each other; workspace and reserve must not overlap anything.
 * ------------------------------------------------------------------------------------------------------------- */
OPENRNN_API openrnn_status openrnn_forward(openrnn_handle_t handle, openrnn_rnn_desc_t rnn, openrnn_fwd_mode mode,
                                           openrnn_seq_desc_t x_desc, const void* x, void* y, const void* hx,
                                           void* hy, const void* cx, void* cy, const void* weights,
                                           size_t weight_bytes, void* workspace, size_t workspace_bytes,
                                           void* reserve, size_t reserve_bytes);

/* Gradients with respect to the inputs and initial states, after forward(TRAINING) with the same descriptors,
 * weights and reserve space (which holds the activations and a copy of hx/cx). Modifies the reserve space: it then
 * holds what backward_weights needs, so call backward_data once per forward.
 *   dy  [like y]          gradient of the loss w.r.t. y; padding steps ignored; not null
 *   dhy [L*D, B, Hout]    gradient w.r.t. hy; null = zeros
 *   dcy [L*D, B, H]       gradient w.r.t. cy (LSTM only); null = zeros
 *   dx  [like x]          written; not null; padding steps = padding_fill
 *   dhx [L*D, B, Hout]    written; null = not wanted
 *   dcx [L*D, B, H]       written (LSTM only); null = not wanted */
OPENRNN_API openrnn_status openrnn_backward_data(openrnn_handle_t handle, openrnn_rnn_desc_t rnn,
                                                 openrnn_seq_desc_t x_desc, const void* dy, void* dx,
                                                 const void* dhy, void* dhx, const void* dcy, void* dcx,
                                                 const void* weights, size_t weight_bytes, void* workspace,
                                                 size_t workspace_bytes, void* reserve, size_t reserve_bytes);

/* Gradient with respect to every weight, after backward_data on the same reserve space (the reserve keeps the
 * forward's initial states, so they are not passed again).
 *   x        the forward's input; not null
 *   dweights [like weights], weight_bytes long; SET overwrites it, ADD accumulates into it. Must not overlap the
 *            weights. */
OPENRNN_API openrnn_status openrnn_backward_weights(openrnn_handle_t handle, openrnn_rnn_desc_t rnn,
                                                    openrnn_wgrad_mode wgrad_mode, openrnn_seq_desc_t x_desc,
                                                    const void* x, void* dweights,
                                                    size_t weight_bytes, void* workspace, size_t workspace_bytes,
                                                    const void* reserve, size_t reserve_bytes);

#ifdef __cplusplus
}
#endif

#endif /* OPENRNN_OPENRNN_H */
