// OutputDir: the --out DIR rule. Each case builds the directory state by hand, applies one rule
// and checks the directory afterwards and the exact message of a refusal.

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "support/output_dir.hpp"
#include "support/temp_files.hpp"
#include "test_support.hpp"

using namespace ccsim;
namespace fs = std::filesystem;

namespace {

using test::entries;
using test::read_text;

support::OutputDirRules before_work() {
  support::OutputDirRules rules;
  rules.create = support::CreateDir::BeforeWork;
  return rules;
}

support::OutputDirRules regular(std::vector<std::string> names) {
  support::OutputDirRules rules;
  rules.regular_files = std::move(names);
  return rules;
}

/// The message prepare() throws, or "no error".
std::string prepare_error(const std::string& dir, const support::OutputDirRules& rules) {
  try {
    support::OutputDir(dir, rules).prepare();
  } catch (const support::OutputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("OutputDir refuses a DIR that is a file, with the option and the path in the message") {
  test::TempDir dir;
  const std::string file = dir.write("file", "keep\n");
  for (const auto& rules : {before_work(), regular({"plan.json"}), support::OutputDirRules{}}) {
    CHECK(prepare_error(file, rules) == "--out " + file + ": exists and is not a directory");
  }
  support::OutputDirRules named;
  named.option = "--dump";
  CHECK(prepare_error(file, named) == "--dump " + file + ": exists and is not a directory");
  CHECK(read_text(file) == "keep\n");
}

TEST_CASE("OutputDir with CreateDir::BeforeWork creates DIR at once and removes it when it stays empty") {
  test::TempDir dir;
  const fs::path out = dir.path / "a" / "b";
  SECTION("left empty: removed with the OutputDir, its parents stay") {
    {
      support::OutputDir d(out.string(), before_work());
      d.prepare();
      CHECK(fs::is_directory(out));
    }
    CHECK_FALSE(fs::exists(out));
    CHECK(fs::is_directory(dir.path / "a"));
  }
  SECTION("written into: kept") {
    {
      support::OutputDir d(out.string(), before_work());
      d.prepare();
      d.write("report.json", "{}\n");
    }
    CHECK(entries(out) == std::vector<std::string>{"report.json"});
    CHECK(read_text(out / "report.json") == "{}\n");
  }
  SECTION("a DIR that was there already is kept, empty or not") {
    fs::create_directories(out);
    {
      support::OutputDir d(out.string(), before_work());
      d.prepare();
    }
    CHECK(fs::is_directory(out));
  }
  SECTION("not prepared: nothing is created or removed") {
    { support::OutputDir d(out.string(), before_work()); }
    CHECK_FALSE(fs::exists(dir.path / "a"));
  }
}

TEST_CASE("OutputDir with CreateDir::AtWrite creates DIR only in create(), and keeps it") {
  test::TempDir dir;
  const fs::path out = dir.path / "plan";
  {
    support::OutputDir d(out.string(), regular({"plan.json", "best.yaml"}));
    d.prepare();
    CHECK_FALSE(fs::exists(out));
    d.create();
    CHECK(fs::is_directory(out));
    d.create();  // a no-op where DIR is there
  }
  CHECK(fs::is_directory(out));
  CHECK(entries(out).empty());
}

TEST_CASE("OutputDir refuses a named file that is not a regular file, before any work") {
  test::TempDir dir;
  const fs::path out = dir.path / "sweep";
  fs::create_directories(out / "sweep.json");
  CHECK(prepare_error(out.string(), regular({"sweep.csv", "sweep.json"})) ==
        "--out " + out.string() + ": sweep.json exists and is not a regular file");
  SECTION("a FIFO is refused too") {
    fs::remove(out / "sweep.json");
    REQUIRE(::mkfifo((out / "sweep.csv").c_str(), 0600) == 0);
    CHECK(prepare_error(out.string(), regular({"sweep.csv", "sweep.json"})) ==
          "--out " + out.string() + ": sweep.csv exists and is not a regular file");
  }
  SECTION("a symbolic link to a regular file, or a name not listed, passes") {
    fs::remove(out / "sweep.json");
    dir.write("target.csv", "old\n");
    fs::create_symlink(dir.path / "target.csv", out / "sweep.csv");
    fs::create_directories(out / "other");
    CHECK(prepare_error(out.string(), regular({"sweep.csv", "sweep.json"})) == "no error");
  }
}

TEST_CASE("OutputDir::create names DIR and the reason when it cannot be made") {
  test::TempDir dir;
  const std::string file = dir.write("file", "x");
  const std::string out = file + "/sub";
  std::string message;
  try {
    support::OutputDir(out, support::OutputDirRules{}).create();
  } catch (const support::OutputError& e) {
    message = e.what();
  }
  CHECK(message == "--out " + out + ": cannot create the directory (Not a directory)");
  // BeforeWork reports it from prepare(), and removes nothing.
  CHECK(prepare_error(out, before_work()) == "--out " + out + ": cannot create the directory (Not a directory)");
  CHECK(fs::is_regular_file(file));
}

TEST_CASE("OutputDir's write probe leaves nothing behind and refuses a DIR it cannot write into") {
  test::TempDir dir;
  support::OutputDirRules rules = before_work();
  rules.probe_prefix = ".probe";
  const fs::path out = dir.path / "replay";
  {
    support::OutputDir d(out.string(), rules);
    d.prepare();
    CHECK(entries(out).empty());  // the probe .probe.PID is gone again
    CHECK(support::registered_temp_files() == 0);
    d.write("x.log", "x\n");
  }
  if (::geteuid() != 0) {  // root writes into a read-only directory anyway
    const fs::path locked = dir.path / "locked";
    fs::create_directories(locked);
    ::chmod(locked.c_str(), 0555);
    CHECK(prepare_error(locked.string(), rules) == "--out " + locked.string() + ": cannot write into the directory (Permission denied)");
    ::chmod(locked.c_str(), 0755);
  }
}

TEST_CASE("OutputDir::remove_stale: a regular marker goes; links and special files by the rule") {
  test::TempDir dir;
  const fs::path out = dir.path / "out";
  fs::create_directories(out);
  const support::OutputDir d(out.string(), support::OutputDirRules{});
  dir.write("target.json", "target\n");

  SECTION("RemoveIfRegular: a regular file goes, a symbolic link stays") {
    dir.write("out/report.json", "old\n");
    fs::create_symlink(dir.path / "target.json", out / "link.json");
    d.remove_stale("report.json", support::Stale::RemoveIfRegular);
    d.remove_stale("link.json", support::Stale::RemoveIfRegular);
    d.remove_stale("missing.json", support::Stale::RemoveIfRegular);
    CHECK(entries(out) == std::vector<std::string>{"link.json"});
  }
  SECTION("Remove: a symbolic link goes, its target stays") {
    fs::create_symlink(dir.path / "target.json", out / "plan.json");
    d.remove_stale("plan.json", support::Stale::Remove);
    d.remove_stale("missing.json", support::Stale::Remove);
    CHECK(entries(out).empty());
    CHECK(read_text(dir.path / "target.json") == "target\n");
  }
  SECTION("RemoveOrThrow: a file that cannot go is an OutputError naming it") {
    dir.write("out/all_reduce_perf.log", "stale\n");
    d.remove_stale("all_reduce_perf.log", support::Stale::RemoveOrThrow);
    CHECK(entries(out).empty());
    CHECK_NOTHROW(d.remove_stale("missing.log", support::Stale::RemoveOrThrow));
    fs::create_directories(out / "busy.log" / "inside");  // a non-empty directory cannot be removed
    std::string message;
    try {
      d.remove_stale("busy.log", support::Stale::RemoveOrThrow);
    } catch (const support::OutputError& e) {
      message = e.what();
    }
    CHECK(message == "--out " + out.string() + ": cannot replace busy.log (Directory not empty)");
  }
}

TEST_CASE("OutputDir::write and path name files in DIR") {
  test::TempDir dir;
  const support::OutputDir d((dir.path / "w").string(), support::OutputDirRules{});
  CHECK(d.path("ops.csv") == (dir.path / "w" / "ops.csv").string());
  CHECK(d.dir() == (dir.path / "w").string());
  d.create();
  d.write("ops.csv", "a,b\n");
  d.write("ops.csv", "c,d\n");
  CHECK(read_text(dir.path / "w" / "ops.csv") == "c,d\n");
  CHECK(entries(dir.path / "w") == std::vector<std::string>{"ops.csv"});
}
