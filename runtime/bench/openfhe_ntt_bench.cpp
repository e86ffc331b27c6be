// Google Benchmark: OpenFHE's own negacyclic NTT, timed in the same harness as ours
// (ntt_bench.cpp), as the reference row of `bench/run ntt`.
//
// The `openfhe` PyPI wheel ships libOPENFHEcore.so.1 but no headers and no Python binding
// of the NTT, so this binary loads the library with dlopen (path in HEC_OPENFHE_CORE_LIB)
// and calls the functions an OpenFHE user's DCRTPoly format switch calls:
// ChineseRemainderTransformFTTNat<NativeVector>::ForwardTransformToBitReverseInPlace and
// InverseTransformFromBitReverseInPlace (its Harvey butterflies with Shoup precomputation
// and its cached twiddle tables), on a NativeVector built by the library's own constructor.
// Symbols are the Itanium-mangled names of OpenFHE v1.5.1; the NativeVector object is
// 40 bytes (vtable pointer, modulus, std::vector) in that release, and we reserve more.
// Before timing, the OpenFHE output is checked against our transform with the same prime
// and root (same bit-reversed order); a mismatch aborts the benchmark with an error, so a
// wrong call cannot produce a figure.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "math/aligned.h"
#include "math/ntt.h"
#include "math/primes.h"

namespace {

using hec::math::u64;

struct OpenFhe {
  // NativeIntegerT<unsigned long> is one 64-bit word; NativeVectorT is passed by pointer.
  using VectorCtor = void (*)(void* self, unsigned length, const u64* modulus);
  using VectorDtor = void (*)(void* self);
  using VectorAt = u64* (*)(void* self, unsigned long index);
  using Transform = void (*)(void* self, const u64* root, unsigned cyclo_order, void* vector);
  VectorCtor vector_ctor = nullptr;
  VectorDtor vector_dtor = nullptr;
  VectorAt at = nullptr;
  Transform forward = nullptr, inverse = nullptr;
  std::string error;
};

const OpenFhe& openfhe() {
  static const OpenFhe lib = [] {
    OpenFhe f;
    const char* path = std::getenv("HEC_OPENFHE_CORE_LIB");
    if (path == nullptr) {
      f.error = "HEC_OPENFHE_CORE_LIB is not set (path of the wheel's libOPENFHEcore.so.1)";
      return f;
    }
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      f.error = std::string("dlopen failed: ") + dlerror();
      return f;
    }
    auto sym = [&](const char* name) {
      void* p = dlsym(handle, name);
      if (p == nullptr && f.error.empty()) f.error = std::string("missing symbol ") + name;
      return p;
    };
    f.vector_ctor = reinterpret_cast<OpenFhe::VectorCtor>(
        sym("_ZN6intnat13NativeVectorTINS_14NativeIntegerTImEEEC1EjRKS2_"));
    f.vector_dtor = reinterpret_cast<OpenFhe::VectorDtor>(
        sym("_ZN6intnat13NativeVectorTINS_14NativeIntegerTImEEED1Ev"));
    f.at = reinterpret_cast<OpenFhe::VectorAt>(
        sym("_ZN6intnat13NativeVectorTINS_14NativeIntegerTImEEE2atEm"));
    f.forward = reinterpret_cast<OpenFhe::Transform>(sym(
        "_ZN6intnat31ChineseRemainderTransformFTTNatINS_13NativeVectorTINS_14NativeIntegerTImEEE"
        "EE35ForwardTransformToBitReverseInPlaceERKS3_jPS4_"));
    f.inverse = reinterpret_cast<OpenFhe::Transform>(sym(
        "_ZN6intnat31ChineseRemainderTransformFTTNatINS_13NativeVectorTINS_14NativeIntegerTImEEE"
        "EE37InverseTransformFromBitReverseInPlaceERKS3_jPS4_"));
    return f;
  }();
  return lib;
}

// A NativeVector living in our buffer, built and destroyed by OpenFHE's own functions.
class OpenFheVector {
 public:
  OpenFheVector(const OpenFhe& lib, std::size_t n, u64 modulus) : lib_(lib) {
    lib_.vector_ctor(storage_, static_cast<unsigned>(n), &modulus);
  }
  ~OpenFheVector() { lib_.vector_dtor(storage_); }
  OpenFheVector(const OpenFheVector&) = delete;
  OpenFheVector& operator=(const OpenFheVector&) = delete;
  void* get() { return storage_; }
  u64& operator[](std::size_t i) { return *lib_.at(storage_, i); }

 private:
  const OpenFhe& lib_;
  alignas(64) unsigned char storage_[256] = {};
};

enum class Direction { kForward, kInverse };

template <Direction direction>
void BM_OpenFheNtt(benchmark::State& state) {
  const OpenFhe& lib = openfhe();
  if (!lib.error.empty()) {
    state.SkipWithError(lib.error.c_str());
    return;
  }
  const std::size_t n = std::size_t{1} << state.range(0);
  const hec::math::Modulus q(hec::math::ntt_primes(50, 1, n)[0]);
  const hec::math::NttTables tables(n, q);
  const u64 root = tables.root();
  const unsigned cyclo_order = static_cast<unsigned>(2 * n);
  unsigned char transform_object[64] = {};  // the transform class holds no data members
  std::mt19937_64 rng(1);                   // benchmark input only
  hec::math::AlignedU64Vector ours(n);
  for (u64& x : ours) x = rng() % q.value();
  OpenFheVector v(lib, n, q.value());
  for (std::size_t i = 0; i < n; ++i) v[i] = ours[i];
  // Check: OpenFHE's forward output equals ours (same prime, root and order), and its
  // inverse brings it back.
  lib.forward(transform_object, &root, cyclo_order, v.get());
  hec::math::ntt_forward_inplace(ours.data(), tables);
  for (std::size_t i = 0; i < n; ++i) {
    if (v[i] != ours[i]) {
      state.SkipWithError("OpenFHE forward output differs from ours; not timing it");
      return;
    }
  }
  lib.inverse(transform_object, &root, cyclo_order, v.get());
  hec::math::ntt_inverse_inplace(ours.data(), tables);
  for (std::size_t i = 0; i < n; ++i) {
    if (v[i] != ours[i]) {
      state.SkipWithError("OpenFHE inverse output differs from ours; not timing it");
      return;
    }
  }
  for (auto _ : state) {
    if constexpr (direction == Direction::kForward) {
      lib.forward(transform_object, &root, cyclo_order, v.get());
    } else {
      lib.inverse(transform_object, &root, cyclo_order, v.get());
    }
    benchmark::ClobberMemory();
  }
  state.SetLabel("openfhe");
}

void Args(benchmark::internal::Benchmark* b) {
  for (int log_n = 12; log_n <= 17; ++log_n) b->Args({log_n});
  b->ArgNames({"logN"});
}

BENCHMARK(BM_OpenFheNtt<Direction::kForward>)->Name("BM_OpenFheNttForward")->Apply(Args);
BENCHMARK(BM_OpenFheNtt<Direction::kInverse>)->Name("BM_OpenFheNttInverse")->Apply(Args);

}  // namespace

BENCHMARK_MAIN();
