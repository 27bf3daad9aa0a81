// Internal error type. Library code throws openrnn::Error; src/api.cpp catches every exception at the C boundary,
// stores the message for openrnn_last_error() and returns the status. Nothing else crosses the boundary.
#pragma once

#include <stdexcept>
#include <string>

#include "openrnn/openrnn.h"

namespace openrnn {

class Error : public std::runtime_error {
 public:
  Error(openrnn_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  openrnn_status status() const noexcept { return status_; }

 private:
  openrnn_status status_;
};

[[noreturn]] inline void fail(openrnn_status status, const std::string& message) { throw Error(status, message); }
[[noreturn]] inline void bad_param(const std::string& message) { fail(OPENRNN_STATUS_BAD_PARAM, message); }
[[noreturn]] inline void not_supported(const std::string& message) { fail(OPENRNN_STATUS_NOT_SUPPORTED, message); }

// Sets the calling thread's last-error message (api.cpp). Exposed so backends can annotate without throwing.
void set_last_error(const std::string& message);

}  // namespace openrnn
