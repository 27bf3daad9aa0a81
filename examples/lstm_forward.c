/* The README's example: one LSTM forward on the CPU through the C API.
 * x [T=5, B=2, I=3] -> y [T, B, H=4]; hy [1, B, H]. Prints y's last step and the final states. */
#include <openrnn/openrnn.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                   \
  do {                                                                                                \
    openrnn_status s_ = (call);                                                                       \
    if (s_ != OPENRNN_STATUS_SUCCESS) {                                                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call, openrnn_status_string(s_), openrnn_last_error()); \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

int main(void) {
  enum { T = 5, B = 2, I = 3, H = 4 };
  openrnn_handle_t handle;
  CHECK(openrnn_create_handle(&handle, OPENRNN_DEVICE_CPU, 0));

  openrnn_rnn_config cfg;
  CHECK(openrnn_rnn_config_init(&cfg)); /* LSTM, float32, double bias, 1 layer */
  cfg.input_size = I;
  cfg.hidden_size = H;
  openrnn_rnn_desc_t rnn;
  CHECK(openrnn_create_rnn_desc(&rnn, &cfg));

  const int32_t lengths[B] = {5, 3}; /* the second sequence is shorter: y there is padded with 0 */
  openrnn_seq_desc_t x_desc;
  CHECK(openrnn_create_seq_desc(&x_desc, OPENRNN_DATA_FLOAT, OPENRNN_LAYOUT_SEQ_MAJOR, T, B, I, lengths, 0.0));

  /* Weights: PyTorch's tensors back to back; here every value is 0.1 (load a state_dict by name instead). */
  size_t weight_bytes, workspace_bytes;
  CHECK(openrnn_get_weight_space_size(handle, rnn, &weight_bytes));
  CHECK(openrnn_get_temp_space_sizes(handle, rnn, OPENRNN_FWD_INFERENCE, x_desc, &workspace_bytes, NULL));
  float* w = malloc(weight_bytes);
  for (size_t k = 0; k < weight_bytes / sizeof(float); ++k) w[k] = 0.1f;
  void* workspace = malloc(workspace_bytes ? workspace_bytes : 1);

  float x[T * B * I], y[T * B * H], hy[B * H], cy[B * H];
  for (int k = 0; k < T * B * I; ++k) x[k] = (float)((k % 7) - 3) / 3.0f;

  CHECK(openrnn_forward(handle, rnn, OPENRNN_FWD_INFERENCE, x_desc, x, y, /*hx*/ NULL, hy, /*cx*/ NULL, cy, w,
                        weight_bytes, workspace, workspace_bytes, /*reserve*/ NULL, 0));

  for (int b = 0; b < B; ++b) {
    printf("sequence %d (length %d): hy =", b, lengths[b]);
    for (int j = 0; j < H; ++j) printf(" %.6f", hy[b * H + j]);
    printf("   y[T-1] =");
    for (int j = 0; j < H; ++j) printf(" %.6f", y[((T - 1) * B + b) * H + j]);
    printf("\n");
  }
  free(w);
  free(workspace);
  openrnn_destroy_seq_desc(x_desc);
  openrnn_destroy_rnn_desc(rnn);
  openrnn_destroy_handle(handle);
  return 0;
}
