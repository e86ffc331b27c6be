// RNS-CKKS parameter sets: validation against the HE Standard 128-bit table, prime chains
// from bit sizes, canonical encoding and digest (see params.h).
#include "ckks/params.h"

#include "core/security.h"

#include <sodium.h>

#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/bytes.h"
#include "math/primes.h"

namespace hec::ckks {
namespace {

using core::kMinSecureLogN;
constexpr std::uint32_t kEncodingVersion = 1;
// Version 2 appends the key level (written only when keys are limited below L).
constexpr std::uint32_t kEncodingVersionKeyLevel = 2;

std::string list_string(const std::vector<u64>& v) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  out << "]";
  return out.str();
}

}  // namespace

int he_standard_max_log_qp(int log_n) { return core::he_standard_max_log_qp(log_n); }

Parameters Parameters::from_primes(LogN log_n, std::vector<u64> output_moduli,
                                   std::vector<u64> moduli, std::vector<u64> special_moduli,
                                   int dnum, Security security, KeySwitching key_switching) {
  Parameters p;
  p.key_switching_ = key_switching;
  p.log_n_ = log_n.value;
  p.output_moduli_ = std::move(output_moduli);
  p.moduli_ = std::move(moduli);
  p.special_moduli_ = std::move(special_moduli);
  p.dnum_ = dnum;
  p.validate_and_finish(security);
  return p;
}

Parameters Parameters::from_bit_sizes(LogN log_n, std::vector<int> output_bits, int scale_bits,
                                      int levels, std::vector<int> special_bits, int dnum,
                                      Security security, KeySwitching key_switching) {
  if (log_n.value < core::kHeStandardMinLogN || log_n.value > core::kHeStandardMaxLogN) {
    throw std::invalid_argument("Parameters: log_n = " + std::to_string(log_n.value) +
                                " outside [10, 17]");
  }
  if (levels < 0) {
    throw std::invalid_argument("Parameters: levels = " + std::to_string(levels) + " must be >= 0");
  }
  const u64 two_n = u64{2} << log_n.value;
  std::set<u64> used;
  // Take `count` primes = 1 mod 2N near 2^bits, alternating above/below, skipping used ones.
  auto take = [&](int bits, std::size_t count, bool alternate, const char* what) {
    if (bits < 20 || bits > 60) {
      throw std::invalid_argument(std::string("Parameters: ") + what + " bit size " +
                                  std::to_string(bits) + " outside [20, 60]");
    }
    std::vector<u64> avoid(used.begin(), used.end());
    // Output and special primes: the largest below 2^bits; scaling primes: alternating.
    std::vector<u64> primes = alternate
                                  ? math::ntt_primes_alternating(bits, count, two_n / 2, avoid)
                                  : math::ntt_primes(bits, count, two_n / 2, avoid);
    for (u64 q : primes) used.insert(q);
    return primes;
  };
  std::vector<u64> output, scaling, special;
  for (int b : output_bits) output.push_back(take(b, 1, false, "output prime")[0]);
  if (levels > 0)
    scaling = take(scale_bits, static_cast<std::size_t>(levels), true, "scaling prime");
  for (int b : special_bits) special.push_back(take(b, 1, false, "special prime")[0]);
  return from_primes(log_n, std::move(output), std::move(scaling), std::move(special), dnum,
                     security, key_switching);
}

void Parameters::validate_and_finish(Security security) {
  const std::string where = "Parameters";
  if (log_n_ < core::kHeStandardMinLogN || log_n_ > core::kHeStandardMaxLogN) {
    throw std::invalid_argument(where + ": log_n = " + std::to_string(log_n_) +
                                " outside [10, 17]");
  }
  if (log_n_ < kMinSecureLogN && security != Security::kInsecure) {
    throw std::invalid_argument(where + ": log_n = " + std::to_string(log_n_) +
                                " is below 12; only allowed with Security::kInsecure");
  }
  if (output_moduli_.empty()) {
    throw std::invalid_argument(where + ": output_moduli is empty (Q_0 needs a prime)");
  }
  // Hybrid parameters without P are valid for programs that never switch keys (the chi-square
  // GWAS: no relinearization, no rotation); KeyGenerator refuses to make a key-switching key
  // for them, so P costs no modulus bits (and no ring dimension) where it is not used.
  if (key_switching_ == KeySwitching::kBv && !special_moduli_.empty()) {
    throw std::invalid_argument(where + ": " + std::to_string(special_moduli_.size()) +
                                " special primes given, BV key switching takes none");
  }
  chain_ = output_moduli_;
  chain_.insert(chain_.end(), moduli_.begin(), moduli_.end());
  const u64 two_n = u64{2} << log_n_;
  std::set<u64> seen;
  auto check_prime = [&](u64 q, const char* what) {
    if (q >= (u64{1} << 61) || q < 3) {
      throw std::invalid_argument(where + ": " + what + " " + std::to_string(q) +
                                  " outside [3, 2^61)");
    }
    if (q % two_n != 1) {
      throw std::invalid_argument(where + ": " + what + " " + std::to_string(q) +
                                  " is not 1 mod 2N = " + std::to_string(two_n));
    }
    if (!math::is_prime(q)) {
      throw std::invalid_argument(where + ": " + what + " " + std::to_string(q) + " is not prime");
    }
    if (!seen.insert(q).second) {
      throw std::invalid_argument(where + ": " + what + " " + std::to_string(q) +
                                  " appears twice in the chain");
    }
  };
  for (u64 q : output_moduli_) check_prime(q, "output prime");
  for (u64 q : moduli_) check_prime(q, "rescale prime");
  for (u64 q : special_moduli_) check_prime(q, "special prime");
  const int limbs = static_cast<int>(chain_.size());
  if (key_switching_ == KeySwitching::kBv && dnum_ != limbs) {
    throw std::invalid_argument(
        where + ": dnum = " + std::to_string(dnum_) +
        ", BV key switching has one digit per prime: dnum = " + std::to_string(limbs));
  }
  if (dnum_ < 1 || dnum_ > limbs) {
    throw std::invalid_argument(where + ": dnum = " + std::to_string(dnum_) + " outside [1, " +
                                std::to_string(limbs) + "]");
  }
  // Hybrid key switching needs P at least as large as the largest digit product, else the
  // key-switching noise Q_digit * e / P is not small (Han-Ki 2020, section 3).
  if (key_switching_ == KeySwitching::kHybrid && !special_moduli_.empty()) {
    const std::size_t alpha = digit_size();
    double log_p = 0;
    for (u64 q : special_moduli_) log_p += std::log2(static_cast<double>(q));
    for (std::size_t start = 0; start < chain_.size(); start += alpha) {
      double log_digit = 0;
      for (std::size_t i = start; i < std::min(chain_.size(), start + alpha); ++i) {
        log_digit += std::log2(static_cast<double>(chain_[i]));
      }
      if (log_digit > log_p + 1.0) {
        throw std::invalid_argument(
            where + ": a key-switching digit of " + std::to_string(log_digit) +
            " bits exceeds log2 P = " + std::to_string(log_p) +
            " (dnum = " + std::to_string(dnum_) + "); add special primes or raise dnum");
      }
    }
  }
  const double bound = he_standard_max_log_qp(log_n_);
  insecure_ = log_qp() > bound || log_n_ < kMinSecureLogN;
  if (insecure_ && security != Security::kInsecure) {
    throw std::invalid_argument(
        where + ": log2(QP) = " + std::to_string(log_qp()) +
        " exceeds the HE Standard 128-bit bound " + std::to_string(static_cast<int>(bound)) +
        " for N = 2^" + std::to_string(log_n_) + " (moduli " + list_string(chain_) + ", special " +
        list_string(special_moduli_) + "); pass Security::kInsecure to accept it");
  }
  const auto enc = canonical_encoding();
  crypto_generichash(digest_.data(), digest_.size(), enc.data(), enc.size(), nullptr, 0);
}

std::size_t Parameters::limbs_at(Level level) const {
  if (level.value < 0 || level.value > max_level()) {
    throw std::invalid_argument("Parameters: level " + std::to_string(level.value) +
                                " outside [0, " + std::to_string(max_level()) + "]");
  }
  return output_moduli_.size() + static_cast<std::size_t>(level.value);
}

std::size_t Parameters::digit_size() const {
  const std::size_t limbs = chain_.size();
  const std::size_t d = static_cast<std::size_t>(dnum_);
  return (limbs + d - 1) / d;
}

double Parameters::log_q(Level level) const {
  const std::size_t limbs = limbs_at(level);
  double s = 0;
  for (std::size_t i = 0; i < limbs; ++i) s += std::log2(static_cast<double>(chain_[i]));
  return s;
}

double Parameters::log_qp() const {
  const double q_top = log_q(Level(max_level()));
  double s = log_q(key_level());
  for (u64 p : special_moduli_) s += std::log2(static_cast<double>(p));
  return std::max(q_top, s);
}

Parameters Parameters::with_key_level(Level level, Security security) const {
  if (level.value < 0 || level.value > max_level()) {
    throw std::invalid_argument("Parameters: key level " + std::to_string(level.value) +
                                " outside [0, " + std::to_string(max_level()) + "]");
  }
  Parameters p = *this;
  p.key_level_ = level.value == max_level() ? -1 : level.value;
  p.validate_and_finish(security);
  return p;
}

std::vector<std::uint8_t> Parameters::canonical_encoding() const {
  core::ByteWriter w;
  w.put_u32(key_level_ < 0 ? kEncodingVersion : kEncodingVersionKeyLevel);
  w.put_u32(static_cast<std::uint32_t>(log_n_));
  for (const auto* list : {&output_moduli_, &moduli_, &special_moduli_}) {
    w.put_u32(static_cast<std::uint32_t>(list->size()));
    for (u64 q : *list) w.put_u64(q);
  }
  w.put_u32(static_cast<std::uint32_t>(dnum_));
  w.put_u32(key_switching_ == KeySwitching::kBv ? 1 : 0);
  w.put_u32(insecure_ ? 1 : 0);
  if (key_level_ >= 0) w.put_u32(static_cast<std::uint32_t>(key_level_));
  return w.take();
}

Parameters Parameters::from_canonical_encoding(const std::vector<std::uint8_t>& bytes) {
  core::ByteReader r(bytes.data(), bytes.size(), "parameter encoding");
  const std::uint32_t version = r.get_u32();
  if (version != kEncodingVersion && version != kEncodingVersionKeyLevel) {
    throw std::runtime_error("parameter encoding: version " + std::to_string(version) +
                             ", expected " + std::to_string(kEncodingVersion));
  }
  const int log_n = static_cast<int>(r.get_u32());
  std::vector<u64> lists[3];
  for (auto& list : lists) {
    const std::uint32_t count = r.get_u32();
    if (count > 256) {
      throw std::runtime_error("parameter encoding: " + std::to_string(count) +
                               " primes in one list (corrupt?)");
    }
    for (std::uint32_t i = 0; i < count; ++i) list.push_back(r.get_u64());
  }
  const int dnum = static_cast<int>(r.get_u32());
  const std::uint32_t ks = r.get_u32();
  if (ks > 1) {
    throw std::runtime_error("parameter encoding: key-switching code " + std::to_string(ks) +
                             " is neither hybrid (0) nor BV (1)");
  }
  const bool insecure = r.get_u32() != 0;
  const int key_level = version == kEncodingVersionKeyLevel ? static_cast<int>(r.get_u32()) : -1;
  r.expect_end();
  const Security security = insecure ? Security::kInsecure : Security::k128;
  const KeySwitching kind = ks == 1 ? KeySwitching::kBv : KeySwitching::kHybrid;
  if (key_level < 0)
    return from_primes(LogN(log_n), lists[0], lists[1], lists[2], dnum, security, kind);
  // Limited keys: the full chain with P may exceed the bound that the limited set meets.
  const Parameters full =
      from_primes(LogN(log_n), lists[0], lists[1], lists[2], dnum, Security::kInsecure, kind);
  return full.with_key_level(Level(key_level), security);
}

std::string Parameters::describe() const {
  std::ostringstream out;
  out << "CKKS N=2^" << log_n_ << " L=" << max_level() << " |Q_0|=" << output_moduli_.size()
      << " primes, |P|=" << special_moduli_.size() << " primes, "
      << (key_switching_ == KeySwitching::kBv ? "BV" : "hybrid") << " dnum=" << dnum_
      << (key_level_ >= 0 ? ", keys up to level " + std::to_string(key_level_) : "")
      << ", log2(QP)=" << log_qp() << (insecure_ ? " INSECURE (above the 128-bit bound)" : "");
  return out.str();
}

}  // namespace hec::ckks
