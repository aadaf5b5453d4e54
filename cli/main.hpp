// The kgate command line: parses argv, runs the verb, and maps errors to exit codes.
#pragma once

namespace kgate::cli {

/// The whole kgate command (`kgate VERB ...`); returns its exit code.
int main(int argc, char** argv);

}  // namespace kgate::cli
