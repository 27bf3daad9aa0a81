// The subcommands of the `openrnn` CLI. Each takes the arguments after its name and returns the exit status;
// errors are thrown (main.cpp prints them and exits 1, or 2 for UsageError).
#pragma once

#include <string>
#include <vector>

namespace openrnn::app {

int cmd_mnist(const std::vector<std::string>& args);
int cmd_char_train(const std::vector<std::string>& args);
int cmd_char_sample(const std::vector<std::string>& args);
int cmd_data(const std::vector<std::string>& args);
int cmd_plot(const std::vector<std::string>& args);

}  // namespace openrnn::app
