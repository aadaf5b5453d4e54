// The JSON Schemas (runtime/package/kgate-package.schema.json, core/kgate-op.schema.json, draft-07)
// run through a schema validator (valijson, Debian's libvalijson-dev): every manifest and op file
// of the tree is valid under them, and broken documents are refused at the field that is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

class SchemaCheck {
 public:
  explicit SchemaCheck(const fs::path& schema_file) : doc_(read_json(schema_file)) {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(doc_);
    parser.populateSchema(adapter, schema_);
  }

  /// The problems of `doc`, one line each: "launches.[0].grid: <what valijson says>".
  std::vector<std::string> problems(const json& doc) const {
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter adapter(doc);
    std::vector<std::string> out;
    if (validator.validate(schema_, adapter, &results)) return out;
    valijson::ValidationResults::Error e;
    while (results.popError(e)) {
      std::string path;
      for (const auto& c : e.context)
        if (c != "<root>") path += (path.empty() ? "" : ".") + c;
      out.push_back(path + ": " + e.description);
    }
    return out;
  }

 private:
  json doc_;
  valijson::Schema schema_;
};

const fs::path kSource = KGATE_SOURCE_DIR;

std::vector<fs::path> files_named(const std::vector<std::string>& dirs,
                                  bool (*match)(const fs::path&)) {
  std::vector<fs::path> out;
  for (const auto& d : dirs)
    for (const auto& e : fs::recursive_directory_iterator(kSource / d))
      if (e.is_regular_file() && match(e.path())) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// The in-tree kernels' packages as kgate checks them: packed into the build tree (their sources in
// kernels/ reach ../../common, which only kgate pack may resolve), beside the test packages.
TEST(Schema, EveryManifestOfTheTreeIsValid) {
  const SchemaCheck schema(kSource / "runtime/package/kgate-package.schema.json");
  const auto is_manifest = [](const fs::path& p) { return p.filename() == "kgate.json"; };
  auto manifests = files_named({"tests/packages", "examples"}, is_manifest);
  // The corpus packages are source packages too (their header sits beside them):
  // package.corpus_valid validates them packed.
  manifests.erase(std::remove_if(manifests.begin(), manifests.end(),
                                 [](const fs::path& m) {
                                   return m.string().find("tests/packages/corpus/") !=
                                          std::string::npos;
                                 }),
                  manifests.end());
  const fs::path packed = KGATE_PACKED_KERNELS_DIR;
  ASSERT_TRUE(fs::is_directory(packed))
      << packed << " is missing: build the kgate_packages target first";
  size_t packed_count = 0;
  for (const auto& e : fs::recursive_directory_iterator(packed))
    if (e.is_regular_file() && is_manifest(e.path())) {
      manifests.push_back(e.path());
      ++packed_count;
    }
  EXPECT_GE(packed_count, 18u);
  for (const auto& m : manifests) EXPECT_EQ(joined(schema.problems(read_json(m))), "") << m;
}

TEST(Schema, EveryOpFileOfTheTreeIsValid) {
  const SchemaCheck schema(kSource / "core/kgate-op.schema.json");
  auto files = files_named({"kernels", "examples"}, [](const fs::path& p) {
    return p.filename().string().size() > 8 &&
           p.filename().string().rfind(".op.json") == p.filename().string().size() - 8;
  });
  const auto ops =
      files_named({"tests/ops"}, [](const fs::path& p) { return p.extension() == ".json"; });
  files.insert(files.end(), ops.begin(), ops.end());
  ASSERT_GE(files.size(), 10u);
  for (const auto& f : files) {
    const json doc = read_json(f);
    if (doc.value("format", "") != "kgate-op/1") continue;  // a deliberately broken one
    EXPECT_EQ(joined(schema.problems(doc)), "") << f;
  }
}

bool any_at(const std::vector<std::string>& problems, const std::string& path) {
  for (const auto& p : problems)
    if (p.rfind(path + ":", 0) == 0) return true;
  return false;
}

TEST(Schema, BrokenManifestsAreRefusedAtTheirField) {
  const SchemaCheck schema(kSource / "runtime/package/kgate-package.schema.json");
  const json good = read_json(kSource / "tests/packages/softmax_v1/kgate.json");
  ASSERT_EQ(joined(schema.problems(good)), "");
  {
    json m = good;
    m["include_dir"] = json::array();  // unknown key
    EXPECT_FALSE(schema.problems(m).empty());
  }
  {
    json m = good;
    m["launches"] = json::object();
    EXPECT_TRUE(any_at(schema.problems(m), "[launches]")) << joined(schema.problems(m));
  }
  {
    json m = good;
    m.erase("guard");
    EXPECT_FALSE(schema.problems(m).empty());
  }
  {
    json m = good;
    m["captured_inputs"] = json::object({{"a", 1}});
    EXPECT_TRUE(any_at(schema.problems(m), "[captured_inputs]")) << joined(schema.problems(m));
  }
  {
    json m = good;
    m["captured_inputs"] = json::array({"captured/x.safetensors"});
    EXPECT_EQ(joined(schema.problems(m)), "");
  }
  {
    json m = good;
    m["format"] = "kgate-package/9";
    EXPECT_TRUE(any_at(schema.problems(m), "[format]")) << joined(schema.problems(m));
  }
  {
    // A stride argument is [tensor, dim]: the tuple form of "items" (draft-07).
    json m = good;
    m["launches"][0]["args"].push_back({{"stride", json::array({7, "x"})}, {"type", "i64"}});
    EXPECT_FALSE(schema.problems(m).empty());
    m["launches"][0]["args"].back()["stride"] = json::array({"x", 0});
    EXPECT_EQ(joined(schema.problems(m)), "");
  }
}

TEST(Schema, BrokenOpFilesAreRefused) {
  const SchemaCheck schema(kSource / "core/kgate-op.schema.json");
  const json good = read_json(kSource / "tests/ops/softmax.json");
  ASSERT_EQ(joined(schema.problems(good)), "");
  json m = good;
  m.erase("symbols");
  EXPECT_FALSE(schema.problems(m).empty());
  m = good;
  m["sumbols"] = m["symbols"];
  EXPECT_FALSE(schema.problems(m).empty());
}

}  // namespace
