// Keyed BLAKE2b PRF, label encoding and per-provider key derivation (see prf.h).
#include "labhe/prf.h"

#include <sodium.h>

#include <stdexcept>
#include <vector>

namespace hec::labhe {

namespace {

void init_sodium() {
  if (sodium_init() < 0) throw std::runtime_error("libsodium failed to initialize");
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

template <std::size_t Out>
std::array<std::uint8_t, Out> keyed_hash(const PrfKey& key, const std::string& message) {
  init_sodium();
  std::array<std::uint8_t, Out> out{};
  crypto_generichash(out.data(), out.size(), reinterpret_cast<const unsigned char*>(message.data()),
                     message.size(), key.data(), key.size());
  return out;
}

}  // namespace

std::string Label::encode() const {
  std::string out = "hec-labhe-label-v1";
  out.push_back('\0');
  put_u64(out, input.size());
  out += input;
  put_u64(out, row);
  put_u64(out, column);
  return out;
}

PrfKey random_prf_key() {
  init_sodium();
  PrfKey k{};
  randombytes_buf(k.data(), k.size());
  return k;
}

PrfKey derive_provider_key(const PrfKey& master, std::uint32_t provider) {
  std::string msg = "hec-labhe-provider-v1";
  msg.push_back('\0');
  put_u64(msg, provider);
  return keyed_hash<kPrfKeyBytes>(master, msg);
}

KeyCheck key_check(const PrfKey& key) {
  return keyed_hash<kKeyCheckBytes>(key, std::string("hec-labhe-key-check-v1"));
}

Int prf_mask(const PrfKey& key, const Label& label, const Int& modulus) {
  init_sodium();
  const bool power_of_two = mpz_popcount(modulus.get()) == 1;
  const std::size_t bits = power_of_two ? modulus.bits() - 1 : modulus.bits() + 128;
  const std::size_t bytes = (bits + 7) / 8;
  std::string base = label.encode();
  std::vector<std::uint8_t> stream;
  stream.reserve(bytes + 64);
  for (std::uint32_t block = 0; stream.size() < bytes; ++block) {
    std::string msg = base;
    put_u64(msg, block);
    auto out = keyed_hash<crypto_generichash_BYTES_MAX>(key, msg);
    stream.insert(stream.end(), out.begin(), out.end());
  }
  Int b = from_bytes(stream.data(), bytes);
  sodium_memzero(stream.data(), stream.size());
  if (power_of_two) {
    mpz_fdiv_r_2exp(b.get(), b.get(), bits);
  } else {
    mpz_mod(b.get(), b.get(), modulus.get());
  }
  return b;
}

}  // namespace hec::labhe
