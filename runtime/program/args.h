// Command-line parsing for generated programs: one subcommand per party (DESIGN.md §6), each
// with a fixed set of options. An option that a subcommand does not declare is refused by name,
// so for example `compute --sk ...` is a usage error and the server role cannot be handed the
// secret key by mistake. Also the small value syntaxes: NAME=FILE pairs and a:b row ranges.
// The arguments are split by CLI11 (args.cpp; this header does not include it, so generated
// programs compile without it); the checks and every message are ours.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hec::program {

// A usage error: the message says which argument is wrong and what was expected.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string name;  // without the leading "--"
  std::string metavar;
  std::string help;
  bool required = false;
  bool repeated = false;  // may be given several times
  bool flag = false;      // takes no value
};

struct SubcommandSpec {
  std::string name;
  std::string help;
  std::vector<OptionSpec> options;
  std::vector<std::string> positionals;  // names of required positional arguments, in order
};

class ParsedArgs {
 public:
  std::string subcommand;
  // The single value of an option (nullopt when absent); throws UsageError if repeated.
  std::optional<std::string> get(const std::string& name) const;
  // The value of a required option.
  const std::string& require(const std::string& name) const;
  std::vector<std::string> all(const std::string& name) const;
  bool has(const std::string& name) const;
  const std::string& positional(std::size_t i) const;

  std::map<std::string, std::vector<std::string>> values;
  std::vector<std::string> positionals;
};

class CommandLine {
 public:
  CommandLine(std::string program, std::string description);
  void add(SubcommandSpec spec);
  // Parses argv (argv[0] is the program). Throws UsageError for: no subcommand, an unknown
  // subcommand, an unknown option, a missing value, a missing required option or positional,
  // an extra positional, or a repeated single-valued option. "--help"/"-h" anywhere makes
  // the result's subcommand "help" (with the subcommand, if any, as its positional).
  ParsedArgs parse(int argc, const char* const* argv) const;
  std::string usage() const;
  std::string usage(const std::string& subcommand) const;

 private:
  const SubcommandSpec* find(const std::string& name) const;
  std::string program_;
  std::string description_;
  std::vector<SubcommandSpec> subcommands_;
};

// "NAME=VALUE" -> {NAME, VALUE}; throws UsageError naming `option` and the expected `form`
// unless both are non-empty.
std::pair<std::string, std::string> split_assignment(const std::string& option,
                                                     const std::string& text,
                                                     const std::string& form = "NAME=FILE");

// A half-open row range "a:b" (0 <= a < b). Throws UsageError naming `option` otherwise.
struct RowRange {
  std::size_t begin = 0;
  std::size_t end = 0;
};
RowRange parse_row_range(const std::string& option, const std::string& text);
// A positive integer (decimal digits only); else UsageError "`what` must be a positive
// integer, got 'TEXT'".
std::size_t parse_positive(const std::string& what, const std::string& text);

}  // namespace hec::program
