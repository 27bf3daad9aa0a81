/* The installed-package check: include the public header, link openrnn::openrnn, ask the version and make a CPU
 * handle. Prints "openrnn <version> cpu handle ok" on success. */
#include <stdio.h>

#include <openrnn/openrnn.h>

int main(void) {
  const int v = openrnn_version();
  if (v != OPENRNN_VERSION) {
    fprintf(stderr, "library version %d differs from the header's %d\n", v, OPENRNN_VERSION);
    return 1;
  }
  openrnn_handle_t h = NULL;
  const openrnn_status s = openrnn_create_handle(&h, OPENRNN_DEVICE_CPU, 0);
  if (s != OPENRNN_STATUS_SUCCESS) {
    fprintf(stderr, "openrnn_create_handle: %s: %s\n", openrnn_status_string(s), openrnn_last_error());
    return 1;
  }
  openrnn_device dev;
  int ordinal = -1;
  if (openrnn_get_handle_device(h, &dev, &ordinal) != OPENRNN_STATUS_SUCCESS || dev != OPENRNN_DEVICE_CPU) {
    fprintf(stderr, "openrnn_get_handle_device failed\n");
    return 1;
  }
  openrnn_destroy_handle(h);
  printf("openrnn %d cpu handle ok\n", v);
  return 0;
}
