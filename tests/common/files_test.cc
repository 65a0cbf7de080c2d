// write_file_atomically (common/files.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/files.h"

namespace podsim {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("podsim_files_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OutputFile, WritesTheWholeTextAndLeavesNoTempFile) {
  fs::path dir = fresh_dir("write");
  write_file_atomically((dir / "r.json").string(), "{\"a\": 1}\n");
  EXPECT_EQ(read(dir / "r.json"), "{\"a\": 1}\n");
  write_file_atomically((dir / "r.json").string(), "second\n");  // replaces
  EXPECT_EQ(read(dir / "r.json"), "second\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(OutputFile, MissingFolderIsAUserErrorAndWritesNothing) {
  fs::path dir = fresh_dir("missing");
  fs::path target = dir / "no_such_folder" / "r.json";
  try {
    write_file_atomically(target.string(), "x");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, target.string());
  }
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 0);
}

TEST(OutputFile, ACheckBeforeTheRenameThatThrowsLeavesNoFile) {
  fs::path dir = fresh_dir("check");
  const std::string target = (dir / "t.json").string();
  const auto write = [](std::ostream& out) { out << "12345"; };
  EXPECT_THROW(write_stream_atomically(target, write, "trace file",
                                       [] { throw UserError("over the limit"); }),
               UserError);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 0);
  write_stream_atomically(target, write, "trace file", [] {});
  EXPECT_EQ(read(target), "12345");
  try {
    write_stream_atomically((dir / "missing" / "t.json").string(), write, "trace file");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(), "cannot write the trace file");
  }
}

}  // namespace
}  // namespace podsim
