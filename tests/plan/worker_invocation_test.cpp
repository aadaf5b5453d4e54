// A worker's arguments from its description (plan/worker_invocation.hpp): the parent's arguments
// first, then what the worker is told, in one fixed order.
#include "plan/worker_invocation.hpp"

#include <gtest/gtest.h>

namespace kgate::plan {
namespace {

using Args = std::vector<std::string>;

TEST(WorkerInvocation, ATargetsWorkerTakesTheParentsArgumentsAndItsOwn) {
  RunRequest r;
  const auto w = WorkerInvocation::of_target(r, Backend::cpu, {"check", "--seed", "3"},
                                             "softmax_cpu", "out/workers/softmax_cpu");
  EXPECT_EQ(w.args(), (Args{"check", "--seed", "3", "--only", "softmax_cpu", "--out",
                            "out/workers/softmax_cpu", "--in-worker", "--backend", "cpu"}));
}

TEST(WorkerInvocation, TheBackendIsPassedOnOnlyWhenTheParentChoseIt) {
  RunRequest asked;
  asked.backend = "cpu";
  EXPECT_EQ(WorkerInvocation::of_target(asked, Backend::cpu, {}, "k", "o").backend, "");
  RunRequest packages;
  packages.packages = {"pkg"};
  EXPECT_EQ(WorkerInvocation::of_target(packages, Backend::cuda, {}, "k", "o").backend, "");
  EXPECT_EQ(WorkerInvocation::of_target(RunRequest{}, Backend::cuda, {}, "k", "o").backend, "cuda");
}

TEST(WorkerInvocation, AFreshWorkerAfterAFaultIsToldWhereToGoOn) {
  WorkerInvocation w;
  w.parent_args = {"check"};
  w.only = "k";
  w.out_dir = "o";
  w.task.run_comparisons = 6;
  w.device = 1;
  w.backend = "cuda";
  w.task.resume_at = 12;
  w.task.resumed_after_failure = true;
  w.task.reference_copies_at = 11;
  w.observed_sizes = "[]";
  EXPECT_EQ(w.args(), (Args{"check", "--only", "k", "--out", "o", "--in-worker",
                            "--run-comparisons", "6", "--device", "1", "--backend", "cuda",
                            "--resume-at", "12", "--resumed-after-failure", "--reference-copies-at",
                            "11", "--observed-sizes", "[]"}));
}

TEST(WorkerInvocation, AReferenceOnCopiesFromTheFirstCaseStillSaysWhereToResume) {
  WorkerInvocation w;
  w.only = "k";
  w.out_dir = "o";
  w.task.reference_copies_at = 0;
  EXPECT_EQ(w.args(), (Args{"--only", "k", "--out", "o", "--in-worker", "--resume-at", "0",
                            "--reference-copies-at", "0"}));
  w.task.reference_copies_at = -1;  // none: a first worker says nothing of resuming
  EXPECT_EQ(w.args(), (Args{"--only", "k", "--out", "o", "--in-worker"}));
}

TEST(WorkerInvocation, AWorkerIsToldTheBudgetGrowthTheRunHasLeft) {
  WorkerInvocation w;
  w.only = "k";
  w.out_dir = "o";
  w.task.growth_left_s = 12.5;
  EXPECT_EQ(w.args(),
            (Args{"--only", "k", "--out", "o", "--in-worker", "--growth-left", "12.500"}));
  w.task.growth_left_s = 0;  // none left: said, so that the worker does not take the whole cap
  EXPECT_EQ(w.args(), (Args{"--only", "k", "--out", "o", "--in-worker", "--growth-left", "0.000"}));
  w.task.growth_left_s = -1;  // not told: the worker's own --budget-growth
  EXPECT_EQ(w.args(), (Args{"--only", "k", "--out", "o", "--in-worker"}));
}

TEST(WorkerInvocation, OneCaseAloneIsUntimed) {
  WorkerInvocation w;
  w.parent_args = {"check", "--out", "reports"};
  w.only = "k";
  w.out_dir = "reports/workers/k/shrink";
  w.one_case = "softmax.f32.B1.N257.random.7";
  w.wrapper = {"compute-sanitizer", "--tool", "memcheck"};  // (how it is started, not its args)
  // The parent's --out stays; the worker's own comes later and wins (--out takes the last).
  EXPECT_EQ(w.args(),
            (Args{"check", "--out", "reports", "--only", "k", "--out", "reports/workers/k/shrink",
                  "--in-worker", "--case", "softmax.f32.B1.N257.random.7", "--no-speed"}));
}

}  // namespace
}  // namespace kgate::plan
