#pragma once
// The `--out DIR` rule of the commands that write a set of files into a directory: DIR is
// checked before the work starts (hours of work never end in "cannot write"), created when the
// rules say, and the set's files are written atomically (atomic_file.hpp: a temporary file and
// rename(2); a signal leaves no temporary file behind, temp_files.hpp), the set's marker file
// (the one whose presence means the set is complete) last.
//
// What every caller does alike is the class; where callers differ the difference is a field of
// OutputDirRules or an argument (when DIR is created, which files must be regular files, whether
// DIR is probed for writing, how a stale marker goes).

#include <string>
#include <string_view>
#include <vector>

#include "support/atomic_file.hpp"  // OutputError

namespace ccsim::support {

/// When DIR is created.
enum class CreateDir {
  /// By prepare(), before the work. A DIR created so that is still empty when the OutputDir is
  /// destroyed (the work failed before writing into it) is removed again: a failed run leaves
  /// nothing behind.
  BeforeWork,
  /// By create(), when the work is done and its files are about to be written. Kept, empty or
  /// not, whatever happens afterwards.
  AtWrite,
};

/// What prepare() checks, and when DIR is created.
struct OutputDirRules {
  /// The option the messages name ("--out DIR: exists and is not a directory").
  std::string option = "--out";
  CreateDir create = CreateDir::AtWrite;
  /// Files of the set that must be missing or regular files (a symbolic link to a regular file
  /// counts as one) before the work starts: a directory, FIFO, device or socket in their place
  /// is refused by prepare(). Files not named here are only checked when written.
  std::vector<std::string> regular_files;
  /// With CreateDir::BeforeWork: prepare() creates and removes the file `PREFIX.PID` (PID: this
  /// process's id) in DIR, so that a DIR that cannot be written into is refused before the work.
  /// Empty: no probe.
  std::string probe_prefix;
};

/// How remove_stale() treats a file an earlier run left.
enum class Stale {
  /// Removed when it is a regular file (not through a symbolic link); a symbolic link, device
  /// or FIFO in its place stays and is written through later. Errors are ignored.
  RemoveIfRegular,
  /// Removed whatever it is (a symbolic link goes, its target stays). Errors are ignored.
  Remove,
  /// Removed; an error other than "it is not there" throws OutputError.
  RemoveOrThrow,
};

/// One command's `--out DIR`. Constructing it touches nothing.
class OutputDir {
 public:
  /// `dir`: the option's value, not empty.
  OutputDir(std::string dir, OutputDirRules rules);
  /// Removes DIR when prepare() created it (CreateDir::BeforeWork) and it is empty now.
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  /// The checks before the work: DIR is a directory or missing; the rules' regular_files are
  /// missing or regular files; with CreateDir::BeforeWork DIR is created (with its parents) and,
  /// with a probe_prefix, a file can be created in it. Throws OutputError ("OPTION DIR: exists and
  /// is not a directory", "OPTION DIR: NAME exists and is not a regular file", "OPTION DIR:
  /// cannot create the directory (WHY)", "OPTION DIR: cannot write into the directory (WHY)").
  void prepare();

  /// Creates DIR with its parents where it is missing (CreateDir::AtWrite; a no-op where DIR is
  /// there). Throws OutputError ("OPTION DIR: cannot create the directory (WHY)").
  void create() const;

  /// Removes NAME in DIR as `how` says. Throws OutputError ("OPTION DIR: cannot replace NAME
  /// (WHY)") with Stale::RemoveOrThrow only.
  void remove_stale(const std::string& name, Stale how) const;

  /// Writes NAME in DIR with write_file_atomic (atomic_file.hpp), which throws OutputError.
  void write(const std::string& name, std::string_view content) const;

  /// DIR/NAME.
  std::string path(const std::string& name) const;
  const std::string& dir() const noexcept { return dir_; }

 private:
  std::string dir_;
  OutputDirRules rules_;
  bool created_ = false;  ///< prepare() created DIR
};

}  // namespace ccsim::support
