// Wiping memory that held secret-derived data (libsodium's sodium_memzero, which the compiler
// may not elide): key words, ternary samples, and the temporaries of decryption (the phase
// c_0 + c_1 s + ... = Delta m + e, whose error e together with the ciphertext determines s).
// Freed memory that malloc keeps for reuse (math/aligned.cpp) then holds no secret.
#pragma once

#include <sodium.h>

#include <cstddef>
#include <vector>

namespace hec::core {

inline void wipe(void* data, std::size_t bytes) { sodium_memzero(data, bytes); }

template <class T, class A>
void wipe(std::vector<T, A>& v) {
  sodium_memzero(v.data(), v.size() * sizeof(T));
}

// Base of a secret-key type: assigning over a key wipes its old words first (Derived::wipe()),
// then the defaulted member-wise assignment of Derived copies or moves the new ones in. Derived
// declares its copy/move operations `= default` and a destructor that calls wipe() (a base
// destructor runs after the members are gone, so it cannot).
template <class Derived>
class WipedOnReassign {
 protected:
  WipedOnReassign() = default;
  WipedOnReassign(const WipedOnReassign&) = default;
  WipedOnReassign(WipedOnReassign&&) noexcept = default;
  WipedOnReassign& operator=(const WipedOnReassign& other) {
    if (this != &other) static_cast<Derived*>(this)->wipe();
    return *this;
  }
  WipedOnReassign& operator=(WipedOnReassign&& other) noexcept {
    if (this != &other) static_cast<Derived*>(this)->wipe();
    return *this;
  }
  ~WipedOnReassign() = default;
};

}  // namespace hec::core
