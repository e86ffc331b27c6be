// Tests for program/args.h: each usage error names the command, the argument and what was
// expected; an option a subcommand does not declare (e.g. --sk for compute) is refused.
#include "program/args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hec::program {
namespace {

CommandLine example() {
  CommandLine cl("prog", "an example");
  cl.add({"compute",
          "server",
          {{"eval", "FILE", "evaluation keys", true},
           {"in", "DIR", "ciphertexts", true},
           {"threads", "N", "threads", false}},
          {}});
  cl.add({"encrypt",
          "data owner",
          {{"input", "NAME=FILE", "an input", true, true},
           {"quiet", "", "no progress", false, false, true}},
          {}});
  cl.add({"info", "print a header", {}, {"FILE"}});
  return cl;
}

ParsedArgs parse(const CommandLine& cl, std::vector<const char*> args) {
  args.insert(args.begin(), "prog");
  return cl.parse(static_cast<int>(args.size()), args.data());
}

std::string usage_error(const CommandLine& cl, std::vector<const char*> args) {
  try {
    parse(cl, std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Args, ParsesOptionsBothSpellings) {
  const auto cl = example();
  const ParsedArgs a = parse(cl, {"compute", "--eval", "k/eval", "--in=ct"});
  EXPECT_EQ(a.subcommand, "compute");
  EXPECT_EQ(a.require("eval"), "k/eval");
  EXPECT_EQ(a.get("in"), "ct");
  EXPECT_FALSE(a.get("threads").has_value());
}

TEST(Args, RepeatedOptionsAndFlags) {
  const auto cl = example();
  const ParsedArgs a =
      parse(cl, {"encrypt", "--input", "y=y.npy", "--input", "S=S.npy", "--quiet"});
  EXPECT_EQ(a.all("input"), (std::vector<std::string>{"y=y.npy", "S=S.npy"}));
  EXPECT_TRUE(a.has("quiet"));
}

TEST(Args, UnknownOptionIsRefusedByName) {
  const auto cl = example();
  const std::string e = usage_error(cl, {"compute", "--eval", "e", "--in", "d", "--sk", "s"});
  EXPECT_NE(e.find("compute: unknown option --sk (options: --eval, --in, --threads)"),
            std::string::npos)
      << e;
}

TEST(Args, MissingRequiredOption) {
  EXPECT_NE(usage_error(example(), {"compute", "--eval", "e"})
                .find("compute: missing required option --in DIR"),
            std::string::npos);
}

TEST(Args, MissingValue) {
  EXPECT_NE(usage_error(example(), {"compute", "--in", "d", "--eval"})
                .find("--eval needs a value (FILE)"),
            std::string::npos);
}

TEST(Args, RepeatedSingleOption) {
  EXPECT_NE(usage_error(example(), {"compute", "--eval", "a", "--eval", "b", "--in", "d"})
                .find("--eval given more than once"),
            std::string::npos);
}

TEST(Args, UnknownAndMissingCommand) {
  EXPECT_NE(usage_error(example(), {"frobnicate"}).find("unknown command 'frobnicate'"),
            std::string::npos);
  EXPECT_NE(usage_error(example(), {}).find("no command given"), std::string::npos);
}

TEST(Args, Positionals) {
  const auto cl = example();
  EXPECT_EQ(parse(cl, {"info", "f.ct"}).positional(0), "f.ct");
  EXPECT_NE(usage_error(cl, {"info"}).find("missing argument FILE"), std::string::npos);
  EXPECT_NE(usage_error(cl, {"info", "a", "b"}).find("unexpected argument 'b'"), std::string::npos);
}

TEST(Args, HelpAnywhere) {
  const auto cl = example();
  const ParsedArgs a = parse(cl, {"compute", "--help"});
  EXPECT_EQ(a.subcommand, "help");
  EXPECT_EQ(a.positional(0), "compute");
  EXPECT_NE(cl.usage("compute").find("--eval FILE"), std::string::npos);
  EXPECT_NE(cl.usage().find("encrypt"), std::string::npos);
}

TEST(Args, Assignments) {
  EXPECT_EQ(split_assignment("--input", "S=data/S.npy"),
            (std::pair<std::string, std::string>{"S", "data/S.npy"}));
  EXPECT_THROW(split_assignment("--input", "S.npy"), UsageError);
  EXPECT_THROW(split_assignment("--input", "=S.npy"), UsageError);
  EXPECT_THROW(split_assignment("--input", "S="), UsageError);
}

TEST(Args, RowRanges) {
  const RowRange r = parse_row_range("--rows", "10:250");
  EXPECT_EQ(r.begin, 10u);
  EXPECT_EQ(r.end, 250u);
  for (const char* bad : {"5", "5:5", "7:3", "a:b", ":4", "-1:3"}) {
    EXPECT_THROW(parse_row_range("--rows", bad), UsageError) << bad;
  }
}

}  // namespace
}  // namespace hec::program
