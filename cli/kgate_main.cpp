// The kgate command's entry point. Every verb lives in the kgate_cli library; a project's own kgate
// command (kgate_add_kernel in a consumer project) is this file, its kernels and that library.
#include "cli/main.hpp"

int main(int argc, char** argv) { return kgate::cli::main(argc, argv); }
