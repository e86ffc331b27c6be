// Subcommand parsing for generated programs (see args.h): CLI11 (Debian libcli11-dev) splits
// the arguments; the checks and their messages are ours.
#include "program/args.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <sstream>

namespace hec::program {

std::optional<std::string> ParsedArgs::get(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end() || it->second.empty()) return std::nullopt;
  if (it->second.size() > 1) {
    throw UsageError(subcommand + ": --" + name + " given " + std::to_string(it->second.size()) +
                     " times; give it once");
  }
  return it->second.front();
}

const std::string& ParsedArgs::require(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end() || it->second.empty()) {
    throw UsageError(subcommand + ": missing required option --" + name);
  }
  return it->second.front();
}

std::vector<std::string> ParsedArgs::all(const std::string& name) const {
  auto it = values.find(name);
  return it == values.end() ? std::vector<std::string>{} : it->second;
}

bool ParsedArgs::has(const std::string& name) const { return values.count(name) > 0; }

const std::string& ParsedArgs::positional(std::size_t i) const {
  if (i >= positionals.size()) {
    throw UsageError(subcommand + ": missing positional argument " + std::to_string(i + 1));
  }
  return positionals[i];
}

CommandLine::CommandLine(std::string program, std::string description)
    : program_(std::move(program)), description_(std::move(description)) {}

void CommandLine::add(SubcommandSpec spec) { subcommands_.push_back(std::move(spec)); }

const SubcommandSpec* CommandLine::find(const std::string& name) const {
  for (const auto& s : subcommands_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string CommandLine::usage() const {
  std::ostringstream s;
  s << "usage: " << program_ << " COMMAND [OPTIONS]\n" << description_ << "\n\ncommands:\n";
  for (const auto& c : subcommands_) {
    s << "  " << c.name << std::string(c.name.size() < 10 ? 10 - c.name.size() : 1, ' ') << c.help
      << "\n";
  }
  s << "\n" << program_ << " COMMAND --help shows the options of a command.\n";
  return s.str();
}

std::string CommandLine::usage(const std::string& subcommand) const {
  const SubcommandSpec* spec = find(subcommand);
  if (spec == nullptr) return usage();
  std::ostringstream s;
  s << "usage: " << program_ << " " << spec->name;
  for (const auto& p : spec->positionals) s << " " << p;
  for (const auto& o : spec->options) {
    std::string text = "--" + o.name + (o.flag ? "" : " " + o.metavar);
    if (o.repeated) text += " ...";
    s << " " << (o.required ? text : "[" + text + "]");
  }
  s << "\n" << spec->help << "\n";
  for (const auto& o : spec->options) {
    std::string text = "--" + o.name + (o.flag ? "" : " " + o.metavar);
    s << "  " << text << std::string(text.size() < 28 ? 28 - text.size() : 1, ' ') << o.help
      << "\n";
  }
  return s.str();
}

ParsedArgs CommandLine::parse(int argc, const char* const* argv) const {
  ParsedArgs out;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      out.subcommand = "help";
      if (!args.empty() && args[0] != a && find(args[0]) != nullptr) {
        out.positionals.push_back(args[0]);
      }
      return out;
    }
  }
  if (args.empty()) throw UsageError("no command given\n" + usage());
  const SubcommandSpec* spec = find(args[0]);
  if (spec == nullptr) {
    std::string names;
    for (const auto& c : subcommands_) names += (names.empty() ? "" : ", ") + c.name;
    throw UsageError("unknown command '" + args[0] + "' (commands: " + names + ")");
  }
  out.subcommand = spec->name;
  for (std::size_t i = 1; i < args.size(); ++i) {
    // A value given to a flag (CLI11 would take "--flag=1" as a count).
    for (const auto& o : spec->options) {
      if (o.flag && args[i].rfind("--" + o.name + "=", 0) == 0) {
        throw UsageError(spec->name + ": --" + o.name + " takes no value");
      }
    }
  }

  // CLI11 splits the arguments: "--name VALUE", "--name=VALUE", repeats, flags. Every option
  // takes its values as given (zero or one per occurrence, all occurrences kept), unknown
  // options and positionals are left over (allow_extras), and the checks below name what is
  // wrong in our words (the messages are part of the interface: tests and users read them).
  CLI::App app(description_, program_);
  app.set_help_flag();
  CLI::App* sub = app.add_subcommand(spec->name, spec->help);
  sub->set_help_flag();
  sub->allow_extras();
  std::vector<CLI::Option*> options;
  for (const auto& o : spec->options) {
    if (o.flag) {
      options.push_back(sub->add_flag("--" + o.name, o.help));
      continue;
    }
    options.push_back(sub->add_option("--" + o.name, o.help)
                          ->type_name(o.metavar)
                          ->expected(0, 1)
                          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll));
  }
  std::vector<const char*> cargv = {argv[0]};
  for (const auto& a : args) cargv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::ParseError& e) {
    throw UsageError(spec->name + ": " + e.what());
  }

  std::vector<std::string> extra = sub->remaining();
  for (const auto& a : extra) {
    if (a.rfind("--", 0) != 0) continue;
    std::string name =
        a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
    std::string names;
    for (const auto& o : spec->options) names += (names.empty() ? "--" : ", --") + o.name;
    throw UsageError(spec->name + ": unknown option --" + name + " (options: " + names + ")");
  }
  for (const auto& a : extra) {
    if (out.positionals.size() >= spec->positionals.size()) {
      throw UsageError(spec->name + ": unexpected argument '" + a + "'");
    }
    out.positionals.push_back(a);
  }
  for (std::size_t k = 0; k < spec->options.size(); ++k) {
    const OptionSpec& o = spec->options[k];
    const CLI::Option& opt = *options[k];
    if (opt.count() == 0) continue;
    if (opt.count() > 1 && !o.repeated) {
      throw UsageError(spec->name + ": --" + o.name + " given more than once");
    }
    if (o.flag) {
      out.values[o.name].assign(opt.count(), "");
      continue;
    }
    const std::vector<std::string>& given = opt.results();
    // An occurrence without a value (at the end, or followed by another option) is an empty
    // result for CLI11.
    if (given.size() != opt.count() ||
        std::any_of(given.begin(), given.end(), [](const std::string& v) { return v.empty(); })) {
      throw UsageError(spec->name + ": --" + o.name + " needs a value (" + o.metavar + ")");
    }
    out.values[o.name] = given;
  }
  for (const auto& o : spec->options) {
    if (o.required && out.values.count(o.name) == 0) {
      throw UsageError(spec->name + ": missing required option --" + o.name + " " + o.metavar);
    }
  }
  if (out.positionals.size() < spec->positionals.size()) {
    throw UsageError(spec->name + ": missing argument " +
                     spec->positionals[out.positionals.size()]);
  }
  return out;
}

std::pair<std::string, std::string> split_assignment(const std::string& option,
                                                     const std::string& text,
                                                     const std::string& form) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw UsageError(option + ": expected " + form + ", got '" + text + "'");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::size_t parse_positive(const std::string& what, const std::string& text) {
  if (text.empty() || text.size() > 18 ||
      text.find_first_not_of("0123456789") != std::string::npos || std::stoull(text) == 0) {
    throw UsageError(what + " must be a positive integer, got '" + text + "'");
  }
  return std::stoull(text);
}

RowRange parse_row_range(const std::string& option, const std::string& text) {
  const auto colon = text.find(':');
  auto number = [&](const std::string& s) -> std::size_t {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) {
      throw UsageError(option + ": expected a row range a:b with integers 0 <= a < b, got '" +
                       text + "'");
    }
    return std::stoull(s);
  };
  if (colon == std::string::npos) {
    throw UsageError(option + ": expected a row range a:b, got '" + text + "'");
  }
  RowRange r{number(text.substr(0, colon)), number(text.substr(colon + 1))};
  if (r.begin >= r.end) {
    throw UsageError(option + ": the row range " + text + " is empty (need a < b)");
  }
  return r;
}

}  // namespace hec::program
