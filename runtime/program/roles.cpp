// The scheme-independent pieces of the roles (roles.h): the domain check, signkey, the
// command line, and writing decrypted values.
#include "program/roles.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "math/parallel.h"
#include "program/manifest.h"

namespace hec::program::roles {

void check_domain(const SourceSpec& in, const std::filesystem::path& file, const NpyArray& a) {
  if (!in.domain.bounded) return;
  // A set of small non-negative integers (genotype counts, 0/1 indicators): a table lookup
  // per element instead of a search of the set (a tenth of the encrypt role's time at
  // N = 5000, M = 16384).
  std::array<bool, 256> small{};
  const bool small_set = !in.domain.set.empty() &&
                         std::all_of(in.domain.set.begin(), in.domain.set.end(), [](double x) {
                           return x >= 0 && x < 256 && x == std::floor(x);
                         });
  if (small_set) {
    for (double x : in.domain.set) small[static_cast<std::size_t>(x)] = true;
  }
  auto ok = [&](double v) {
    if (small_set) {
      return v >= 0 && v < 256 && static_cast<double>(static_cast<std::size_t>(v)) == v &&
             small[static_cast<std::size_t>(v)];
    }
    if (!in.domain.set.empty()) {
      return std::find(in.domain.set.begin(), in.domain.set.end(), v) != in.domain.set.end();
    }
    return v >= in.domain.lo && v <= in.domain.hi;
  };
  // Chunks in parallel (a genotype matrix is 10^8 elements), then the first bad element.
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  const std::size_t chunks = (a.data.size() + kChunk - 1) / kChunk;
  std::vector<std::size_t> first_bad(chunks, a.data.size());
  math::parallel_for(chunks, [&](std::size_t c) {
    const std::size_t end = std::min(a.data.size(), (c + 1) * kChunk);
    for (std::size_t i = c * kChunk; i < end; ++i) {
      if (!ok(a.data[i])) {
        first_bad[c] = i;
        return;
      }
    }
  });
  for (std::size_t i : first_bad) {
    if (i == a.data.size()) continue;
    const double v = a.data[i];
    {
      std::ostringstream m;
      m << file.string() << ": input '" << in.name << "' element " << i << " is " << v
        << ", outside its declared domain ";
      if (!in.domain.set.empty()) {
        m << "{";
        for (std::size_t k = 0; k < in.domain.set.size(); ++k) {
          m << (k ? ", " : "") << in.domain.set[k];
        }
        m << "}";
      } else {
        m << "[" << in.domain.lo << ", " << in.domain.hi << "]";
      }
      throw std::runtime_error(m.str());
    }
  }
}

int signkey(const ParsedArgs& args) {
  const std::filesystem::path out = args.require("out");
  if (std::filesystem::exists(out)) {
    throw std::runtime_error(out.string() + " exists: signkey never overwrites a key");
  }
  SigningKey key;
  key.save(out);
  std::cerr << "[signkey] " << out << " (keep it; 0600) and " << out.string() + ".pub"
            << " (give it to the coordinator): " << verify_key_hex(key.verify_key()) << "\n";
  return 0;
}

CommandLine command_line(const ProgramSpec& spec) {
  CommandLine cl(spec.name, "hec program '" + spec.name + "' compiled from " + spec.source +
                                (spec.insecure ? " (INSECURE parameters)" : ""));
  cl.add({"keygen",
          "coordinator: make the secret key, the public key and the evaluation keys",
          {{"out", "KEYDIR", "directory for secret, public, eval/ and the run manifest", true},
           {"rows", "N", "the stream dimension's size (fixes it: a missing last block is refused)"},
           {"owner", "NAME=A:B", "a data owner and its rows (repeat; they cover 0:N)", false, true},
           {"owner-key", "NAME=FILE.pub", "an owner's signing key (its uploads must be signed)",
            false, true},
           {"server-key", "FILE.pub", "the server's signing key (its results must be signed)"},
           {"bind", "KEY=VALUE", "a fact the run is bound to (e.g. a digest of the SNP list)",
            false, true},
           {"size", "NAME=V",
            "fixes a size parameter in the run manifest (repeat; needed for one no upload carries)",
            false, true}},
          {}});
  cl.add({"signkey",
          "any party: make an Ed25519 signing key FILE (0600) and FILE.pub for the coordinator",
          {{"out", "FILE", "the signing key file", true}},
          {}});
  cl.add({"encrypt",
          "data owner: encrypt input arrays under the public key",
          {{"pk", "KEYDIR/public", "the public key", true},
           {"input", "NAME=FILE.npy", "an input array (repeat for several)", true, true},
           {"rows", "A:B", "the files hold rows A..B-1 of the streamed inputs"},
           {"block-rows", "R", "rows per ciphertext file (default: about 64 MiB per file)"},
           {"manifest", "FILE", "the run manifest (default: beside the public key)"},
           {"owner", "NAME", "the data owner uploading (default: the manifest's only owner)"},
           {"sign", "FILE", "the owner's signing key (required when the manifest has one)"},
           {"out", "CTDIR", "directory for the ciphertexts", true}},
          {}});
  cl.add({"compute",
          "server: evaluate the program on ciphertexts (evaluation keys only)",
          {{"eval", "KEYDIR/eval", "the evaluation keys", true},
           {"in", "CTDIR", "the ciphertexts of every input", true},
           {"out", "RESDIR", "directory for the encrypted results", true},
           {"threads", "T", "OpenMP threads (default: HEC_THREADS or all)"},
           {"manifest", "FILE", "the run manifest (default: KEYDIR/eval/manifest)"},
           {"sign", "FILE", "the server's signing key (required when the manifest has one)"}},
          {}});
  cl.add({"decrypt",
          "coordinator: decrypt the results into NAME.npy files (or one .npz)",
          {{"sk", "KEYDIR/secret", "the secret key", true},
           {"in", "RESDIR", "the encrypted results", true},
           {"out", "DIR|FILE.npz", "a directory of NAME.npy files, or one .npz archive", true},
           {"manifest", "FILE", "the run manifest (default: beside the secret key)"},
           {"no-flooding", "",
            "reveal CKKS values without noise flooding (single-party use "
            "only: with the result ciphertexts they give away the secret key)",
            false, false, true},
           {"accept-precision-shortfall", "",
            "reveal an output whose error bound at the run's sizes leaves fewer bits than "
            "promised (stamped: precision_shortfall.txt / the .npz member)",
            false, false, true}},
          {}});
  cl.add({"info", "print the header of a key, ciphertext or metadata file", {}, {"FILE"}});
  return cl;
}

void write_values(const std::filesystem::path& path, const std::vector<std::size_t>& dims,
                  const std::vector<double>& values) {
  write_npy(path, dims, values);
}

void write_values(const std::filesystem::path& path, const std::vector<std::size_t>& dims,
                  const std::vector<std::int64_t>& values) {
  write_npy_int64(path, dims, values);
}

}  // namespace hec::program::roles
