// The roles of a generated labeled-HE program (targets/labhe): each is one subcommand of the
// binary the C++ target emits, which embeds its labeled program (plan.h) and calls
// program_main. The parties and what each holds:
//   setup            (receiver) key pair of the linear scheme, the master PRF key, one PRF key
//                    per data provider, and the public key file with the ownership table
//                    (which provider uploads which rows of which input) and key checks;
//   encrypt-offline  (provider) b = F(K_i, label) and beta = Enc(b) for each of its labels,
//                    before the data exists;
//   encrypt-online   (provider) a = m - b for its rows: the upload (a, beta);
//   evaluate         (server: public key and uploads only) checks the label set and runs the
//                    program on ciphertexts;
//   decrypt-offline  (receiver, while the server works) the masks of every revealed value
//                    from the PRF keys alone;
//   decrypt-online   (receiver) value = Dec(result) + mask, range-checked, one .npy each.
// Labels are (input name, row, column); a rank-1 input's entries are rows, a scalar is row 0.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "labhe/ahe.h"
#include "labhe/files.h"
#include "labhe/plan.h"
#include "labhe/prf.h"

namespace hec::labhe {

// Which provider uploads rows [begin, end) of an input.
struct Part {
  std::string input;
  std::uint32_t provider = 0;
  std::uint64_t begin = 0, end = 0;
};

struct PublicSetup {
  PublicKey pk;
  KeyId key_id{};
  std::uint32_t providers = 0;
  std::vector<Part> parts;
  std::vector<KeyCheck> key_checks;  // one per provider
  std::vector<Part> parts_of(std::uint32_t provider) const;
};

// Rows and columns of an input as labels see them.
std::uint64_t input_rows(const PlanInput& in);
std::uint64_t input_cols(const PlanInput& in);

// The ownership table: the rows of every input not in `owners` split into `providers`
// contiguous blocks (provider i gets rows [i R / P, (i+1) R / P)); an input named in `owners`
// belongs wholly to that provider (which may be >= providers: the count grows). Throws
// std::invalid_argument for an unknown input or a provider with no rows at all.
std::vector<Part> ownership(const Plan& plan, std::uint32_t providers,
                            const std::map<std::string, std::uint32_t>& owners,
                            std::uint32_t* provider_count);

// One provider's upload, parsed.
struct Upload {
  std::string file;
  std::uint32_t provider = 0;
  KeyCheck key_check{};
  std::vector<Part> parts;
  std::vector<std::vector<Int>> a, beta;  // per part, row-major over its rows x columns
};

// Places the uploads into the plan's input arrays (server mode) after checking the label set:
// every provider exactly once, under the key check the setup recorded for it, with exactly
// the rows the ownership table gives it. Throws std::runtime_error naming the upload and the
// provider otherwise. The result does not depend on the order of `uploads`.
std::map<std::string, Array> assemble_uploads(const Plan& plan, const PublicSetup& setup,
                                              std::vector<Upload> uploads);

int program_main(int argc, char** argv, const char* plan_text);

}  // namespace hec::labhe
