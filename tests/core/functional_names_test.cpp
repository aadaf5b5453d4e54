// torch.nn.functional calls in references (core/functional_names.hpp): rewritten where the table
// says the arguments mean the same in ATen, refused with a reason elsewhere. Torch-free; that the
// rewritten references compute what torch.nn.functional does is
// tests/references/script_op_test.cpp's.
#include "core/functional_names.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace kgate {
namespace {

std::string rewritten(const std::string& source) {
  std::vector<std::string> problems;
  const std::string out = rewrite_functional_calls(source, &problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  return out;
}

std::string problem_of(const std::string& source) {
  std::vector<std::string> problems;
  const std::string out = rewrite_functional_calls(source, &problems);
  EXPECT_EQ(problems.size(), 1u);
  EXPECT_EQ(out, source);  // left as it was
  return problems.empty() ? "" : problems.front();
}

TEST(FunctionalNames, CallsBecomeTheirAtenOps) {
  EXPECT_EQ(rewritten("return torch.nn.functional.softmax(x, dim=-1)"),
            "return torch.softmax(x, -1)");
  EXPECT_EQ(rewritten("y = torch.nn.functional.softmax(x, -1, dtype=torch.float32)"),
            "y = torch.softmax(x, -1, dtype=torch.float32)");
  EXPECT_EQ(rewritten("torch.nn.functional.gelu(x, approximate='tanh')"),
            "torch.gelu(x, approximate='tanh')");
  EXPECT_EQ(rewritten("torch.nn.functional.silu(x, inplace=False)"), "torch.silu(x)");
  EXPECT_EQ(rewritten("torch.nn.functional.layer_norm(x, [N], w, eps=eps)"),
            "torch.layer_norm(x, [N], w, eps=eps)");
  // A parameter left out before a given one: the later ones go by ATen's keyword.
  EXPECT_EQ(rewritten("torch.nn.functional.layer_norm(x, [N], eps=1e-5)"),
            "torch.layer_norm(x, [N], eps=1e-5)");
  EXPECT_EQ(
      rewritten(
          "torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=s)"),
      "torch.scaled_dot_product_attention(q, k, v, is_causal=True, scale=s)");
  // F.embedding(input, weight) is torch.embedding(weight, input).
  EXPECT_EQ(rewritten("torch.nn.functional.embedding(ids, table)"), "torch.embedding(table, ids)");
  EXPECT_EQ(rewritten("torch.nn.functional.embedding(weight=table, input=ids)"),
            "torch.embedding(table, ids)");
}

TEST(FunctionalNames, NestedCallsStringsAndCommentsAreRespected) {
  EXPECT_EQ(rewritten("torch.nn.functional.softmax(torch.cat([a, b], dim=1), dim=(1))"),
            "torch.softmax(torch.cat([a, b], dim=1), (1))");
  EXPECT_EQ(rewritten("torch.nn.functional.gelu(x, approximate=\"tanh\")"),
            "torch.gelu(x, approximate=\"tanh\")");
  // A mention in a comment is neither rewritten nor refused.
  const std::string commented = "# like torch.nn.functional.normalize(x)\nreturn x";
  EXPECT_EQ(rewritten(commented), commented);
}

TEST(FunctionalNames, LineBreaksAreKept) {
  const std::string source =
      "def reference(x: Tensor, dim: int) -> Tensor:\n"
      "    return torch.nn.functional.softmax(\n        x,\n        dim=dim)\n";
  const std::string out = rewritten(source);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'),
            std::count(source.begin(), source.end(), '\n'));
  EXPECT_NE(out.find("torch.softmax(x, dim"), std::string::npos) << out;
}

TEST(FunctionalNames, WhatWouldMeanSomethingElseIsRefusedWithTheReason) {
  // F.softmax's third positional parameter is _stacklevel.
  const std::string third = problem_of("torch.nn.functional.softmax(x, -1, torch.float32)");
  EXPECT_NE(third.find("line 1: torch.nn.functional.softmax cannot be rewritten to torch.softmax"),
            std::string::npos)
      << third;
  EXPECT_NE(third.find("_stacklevel"), std::string::npos) << third;
  // F.softmax without dim picks one implicitly (deprecated).
  EXPECT_NE(problem_of("torch.nn.functional.softmax(x)").find("'dim' must be given"),
            std::string::npos);
  EXPECT_NE(problem_of("torch.nn.functional.relu(x, inplace=True)")
                .find("'inplace=True' is not accepted"),
            std::string::npos);
  EXPECT_NE(problem_of("torch.nn.functional.embedding(ids, table, max_norm=1.0)").find("max_norm"),
            std::string::npos);
  const std::string unknown = problem_of("y = x\nreturn torch.nn.functional.normalize(x, dim=-1)");
  EXPECT_NE(unknown.find("line 2: torch.nn.functional.normalize is not accepted"),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("accepted: softmax, log_softmax"), std::string::npos) << unknown;
}

TEST(FunctionalNames, TheTableIsListed) {
  const auto& lines = functional_equivalents();
  ASSERT_GE(lines.size(), 10u);
  EXPECT_EQ(lines.front(), "softmax(input, dim, dtype=) -> torch.softmax");
}

}  // namespace
}  // namespace kgate
