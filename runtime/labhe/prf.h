// The pseudorandom function of labeled HE and its keys (Barbosa-Catalano-Fiore, ESORICS 2017,
// §3 and the multi-user variant of §4): b = F(K, tau) in the message space, for the label
// tau = (input name, row, column). F is keyed BLAKE2b (libsodium crypto_generichash, 256-bit
// keys) in counter mode over the encoded label; outputs are reduced to the message space
// exactly (2^k: the low k bits) or with 128 extra bits (any other modulus: statistically
// uniform). Each data provider gets its own key derived from the receiver's master key:
// K_i = BLAKE2b(key = msk, "hec-labhe-provider-v1" || i), and publishes nothing about it but
// a key check value BLAKE2b(key = K_i, "hec-labhe-key-check-v1") (16 bytes), which lets the
// server and receiver notice a provider's key used in the place of another's.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "labhe/bigint.h"

namespace hec::labhe {

constexpr std::size_t kPrfKeyBytes = 32;
using PrfKey = std::array<std::uint8_t, kPrfKeyBytes>;
constexpr std::size_t kKeyCheckBytes = 16;
using KeyCheck = std::array<std::uint8_t, kKeyCheckBytes>;

struct Label {
  std::string input;
  std::uint64_t row = 0;
  std::uint64_t column = 0;
  std::string encode() const;  // unambiguous byte encoding (length-prefixed name)
};

PrfKey random_prf_key();
PrfKey derive_provider_key(const PrfKey& master, std::uint32_t provider);
KeyCheck key_check(const PrfKey& key);
// b = F(key, label) mod `modulus` (see above).
Int prf_mask(const PrfKey& key, const Label& label, const Int& modulus);

}  // namespace hec::labhe
