// GitHub annotations: an ::error:: or ::warning:: workflow command per failing or doubtful result.
#include "report/writers.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>

#include "core/format.hpp"
#include "report/text.hpp"

namespace kgate {

void write_github_annotations(std::ostream& os, const RunReport& report) {
  for (const auto& k : report.kernels) {
    if (k.outcome == Outcome::failed || k.correctness.failed > 0) {
      std::string msg = k.name + ": " + (k.message.empty() ? "incorrect output" : k.message);
      if (k.correctness.minimal)
        msg = k.name + ": " + k.correctness.minimal->message + " — minimal case " +
              k.correctness.minimal->kcase.id() + " — repro: " + k.correctness.minimal->repro;
      os << "::error title=kgate correctness::" << annotation_escape(msg) << "\n";
    }
    for (const auto& s : k.speed) {
      if (is_failure(s.decision) && (s.decision != Outcome::invalid || inconclusive_fails(report)))
        os << "::error title=kgate speed::"
           << annotation_escape(k.name + " " + case_words(s) + ": " + speed_summary(s)) << "\n";
      else if (s.decision == Outcome::inconclusive || s.decision == Outcome::invalid)
        os << "::warning title=kgate speed::"
           << annotation_escape(k.name + " " + case_words(s) + ": " + speed_summary(s)) << "\n";
    }
  }
}

}  // namespace kgate
