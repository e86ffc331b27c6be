// Subcommand parsing for generated programs (see args.h).
#include "program/args.h"

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
    const std::string& a = args[i];
    if (a.rfind("--", 0) == 0) {
      std::string name = a.substr(2);
      std::optional<std::string> inline_value;
      if (auto eq = name.find('='); eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      const OptionSpec* opt = nullptr;
      for (const auto& o : spec->options) {
        if (o.name == name) opt = &o;
      }
      if (opt == nullptr) {
        std::string names;
        for (const auto& o : spec->options) names += (names.empty() ? "--" : ", --") + o.name;
        throw UsageError(spec->name + ": unknown option --" + name + " (options: " + names + ")");
      }
      std::string value;
      if (opt->flag) {
        if (inline_value) throw UsageError(spec->name + ": --" + name + " takes no value");
      } else if (inline_value) {
        value = *inline_value;
      } else {
        if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) {
          throw UsageError(spec->name + ": --" + name + " needs a value (" + opt->metavar + ")");
        }
        value = args[++i];
      }
      auto& slot = out.values[name];
      if (!slot.empty() && !opt->repeated) {
        throw UsageError(spec->name + ": --" + name + " given more than once");
      }
      slot.push_back(value);
    } else {
      if (out.positionals.size() >= spec->positionals.size()) {
        throw UsageError(spec->name + ": unexpected argument '" + a + "'");
      }
      out.positionals.push_back(a);
    }
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
                                                     const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw UsageError(option + ": expected NAME=FILE, got '" + text + "'");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
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
