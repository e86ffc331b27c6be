// One FHEW key set per parameter set for a whole test binary (key generation is the expensive
// part of the FHEW tests); shared by the gate, linear-gate and gate-program tests.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "fhew/fhew.h"

namespace hec::fhew::test_keys {

struct Keys {
  std::unique_ptr<Context> ctx;
  SecretKey sk;
  EvalKey ek;
};

inline const Keys& keys_for(const Params& p) {
  static std::map<std::string, std::unique_ptr<Keys>> cache;
  auto& slot = cache[p.name];
  if (!slot) {
    slot = std::make_unique<Keys>();
    slot->ctx = std::make_unique<Context>(p);
    slot->sk = slot->ctx->keygen_secret();
    slot->ek = slot->ctx->keygen_eval(slot->sk);
  }
  return *slot;
}

}  // namespace hec::fhew::test_keys
