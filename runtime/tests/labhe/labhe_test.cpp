// Labeled HE end to end below the file layer: a degree-2 plan evaluated on ciphertexts
// (server), on PRF masks (receiver, offline) and on plaintext integers agree with a direct
// integer computation; the uploads' label set, key checks and order; a wrong program's masks
// fail loudly.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "labhe/program.h"

namespace hec::labhe {
namespace {

// Scatter-style program over X [6, 2]: s = sum(X, 0); C = X^T X; D = 6 C - s s^T (as den 36
// of the centred scatter); plus sum(X) + 3 revealed at level 1.
const char* kPlan = R"(hec-labhe-plan 1
program cov
message_bits 40
v 0 input X 1 2 6 2
v 1 sum 0 1 0
v 2 contract 0 0 nd,ne->de
v 3 mulc 2 6
v 4 contract 1 1 d,e->de
v 5 sub 3 4
v 6 addc 1 3
reveal scatter 5 6 100000
reveal shifted 6 1 100000
)";

std::vector<long> data() { return {1, -2, 3, 4, -5, 6, 7, 8, 0, 9, -1, 2}; }

std::vector<long> expected_scatter() {
  auto x = data();
  long s[2] = {0, 0};
  for (int n = 0; n < 6; ++n) {
    s[0] += x[2 * n];
    s[1] += x[2 * n + 1];
  }
  std::vector<long> out;
  for (int d = 0; d < 2; ++d) {
    for (int e = 0; e < 2; ++e) {
      long c = 0;
      for (int n = 0; n < 6; ++n) c += x[2 * n + d] * x[2 * n + e];
      out.push_back(6 * c - s[d] * s[e]);
    }
  }
  return out;
}

struct LabRun {
  Plan plan = Plan::parse(kPlan);
  KeyPair kp;
  PublicSetup setup;
  PrfKey master = random_prf_key();
  explicit LabRun(Scheme scheme, std::uint32_t providers = 3) {
    kp = keygen(scheme, 2048, plan.message_bits);
    setup.pk = kp.pk;
    setup.parts = ownership(plan, providers, {}, &setup.providers);
    for (std::uint32_t i = 0; i < setup.providers; ++i) {
      setup.key_checks.push_back(key_check(derive_provider_key(master, i)));
    }
  }
  Upload upload(std::uint32_t provider, const PrfKey& key) const {
    Upload u;
    u.file = "upload-" + std::to_string(provider);
    u.provider = provider;
    u.key_check = key_check(key);
    auto x = data();
    for (const Part& p : setup.parts_of(provider)) {
      std::vector<Int> a, beta;
      for (std::uint64_t r = p.begin; r < p.end; ++r) {
        for (std::uint64_t c = 0; c < 2; ++c) {
          Int b = prf_mask(key, {p.input, r, c}, setup.pk.msg_modulus);
          Int m(x[2 * r + c]);
          mpz_sub(m.get(), m.get(), b.get());
          mpz_mod(m.get(), m.get(), setup.pk.msg_modulus.get());
          a.push_back(m);
          beta.push_back(encrypt(setup.pk, b));
        }
      }
      u.parts.push_back(p);
      u.a.push_back(a);
      u.beta.push_back(beta);
    }
    return u;
  }
  std::vector<Upload> uploads() const {
    std::vector<Upload> out;
    for (std::uint32_t i = 0; i < setup.providers; ++i) {
      out.push_back(upload(i, derive_provider_key(master, i)));
    }
    return out;
  }
  std::map<std::string, Array> masks() const {
    Array x;
    x.shape = {6, 2};
    for (std::uint64_t r = 0; r < 6; ++r) {
      std::uint32_t who = 0;
      for (const auto& p : setup.parts) {
        if (r >= p.begin && r < p.end) who = p.provider;
      }
      for (std::uint64_t c = 0; c < 2; ++c) {
        x.a.push_back(
            prf_mask(derive_provider_key(master, who), {"X", r, c}, setup.pk.msg_modulus));
      }
    }
    return {{"X", x}};
  }
  std::vector<double> decrypt_all(const Plan& p, const std::vector<Array>& server,
                                  const std::vector<Array>& mask, std::size_t k) const {
    std::vector<double> out;
    for (std::size_t i = 0; i < mask[k].a.size(); ++i) {
      Int raw = server[k].level2 ? decrypt(setup.pk, kp.sk, server[k].c[i]) : server[k].a[i];
      mpz_add(raw.get(), raw.get(), mask[k].a[i].get());
      mpz_mod(raw.get(), raw.get(), setup.pk.msg_modulus.get());
      out.push_back(decode_reveal(p.reveals[k], raw, setup.pk.msg_modulus));
    }
    return out;
  }
};

void expect_correct(Scheme scheme) {
  LabRun run(scheme);
  auto server = evaluate(run.plan, Mode::kServer, run.setup.pk.msg_modulus, &run.setup.pk,
                         assemble_uploads(run.plan, run.setup, run.uploads()));
  auto mask = evaluate(run.plan, Mode::kMask, run.setup.pk.msg_modulus, nullptr, run.masks());
  auto scatter = run.decrypt_all(run.plan, server, mask, 0);
  auto want = expected_scatter();
  ASSERT_EQ(scatter.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(scatter[i], want[i] / 6.0);
  auto shifted = run.decrypt_all(run.plan, server, mask, 1);
  auto x = data();
  for (int d = 0; d < 2; ++d) {
    long s = 0;
    for (int n = 0; n < 6; ++n) s += x[2 * n + d];
    EXPECT_DOUBLE_EQ(shifted[d], static_cast<double>(s + 3));
  }
  // Result ciphertexts: one per output entry, whatever the number of rows.
  EXPECT_EQ(server[0].c.size(), 4u);
  EXPECT_TRUE(server[1].c.empty());  // a level-1 reveal sends a only
  // The plain (exact integer) reference agrees.
  Array xs;
  xs.shape = {6, 2};
  for (long v : data()) {
    Int m(v);
    mpz_mod(m.get(), m.get(), run.setup.pk.msg_modulus.get());
    xs.a.push_back(m);
  }
  auto plain = evaluate(run.plan, Mode::kPlain, run.setup.pk.msg_modulus, nullptr, {{"X", xs}});
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(decode_reveal(run.plan.reveals[0], plain[0].a[i], run.setup.pk.msg_modulus),
                     want[i] / 6.0);
  }
}

TEST(Labeled, JoyeLibertMatchesIntegers) { expect_correct(Scheme::kJoyeLibert); }
TEST(Labeled, PaillierMatchesIntegers) { expect_correct(Scheme::kPaillier); }

TEST(Labeled, UploadOrderDoesNotMatter) {
  LabRun run(Scheme::kJoyeLibert);
  auto ups = run.uploads();
  auto mask = evaluate(run.plan, Mode::kMask, run.setup.pk.msg_modulus, nullptr, run.masks());
  auto first = run.decrypt_all(run.plan,
                               evaluate(run.plan, Mode::kServer, run.setup.pk.msg_modulus,
                                        &run.setup.pk, assemble_uploads(run.plan, run.setup, ups)),
                               mask, 0);
  std::reverse(ups.begin(), ups.end());
  std::swap(ups[0], ups[1]);
  auto second = run.decrypt_all(run.plan,
                                evaluate(run.plan, Mode::kServer, run.setup.pk.msg_modulus,
                                         &run.setup.pk, assemble_uploads(run.plan, run.setup, ups)),
                                mask, 0);
  EXPECT_EQ(first, second);
}

TEST(Labeled, RefusesAnotherProvidersKey) {
  LabRun run(Scheme::kJoyeLibert);
  auto ups = run.uploads();
  ups[1] = run.upload(1, derive_provider_key(run.master, 2));  // provider 1 uses provider 2's key
  try {
    assemble_uploads(run.plan, run.setup, ups);
    FAIL() << "accepted an upload made with another provider's key";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another key"), std::string::npos) << e.what();
  }
}

TEST(Labeled, RefusesWrongLabelSets) {
  LabRun run(Scheme::kJoyeLibert);
  auto ups = run.uploads();
  auto missing = ups;
  missing.pop_back();
  EXPECT_THROW(assemble_uploads(run.plan, run.setup, missing), std::runtime_error);
  auto twice = ups;
  twice.push_back(ups[0]);
  EXPECT_THROW(assemble_uploads(run.plan, run.setup, twice), std::runtime_error);
  auto shifted = ups;
  shifted[0].parts[0].end -= 1;  // claims fewer rows than it owns
  try {
    assemble_uploads(run.plan, run.setup, shifted);
    FAIL() << "accepted a wrong label set";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("wrong label set"), std::string::npos) << e.what();
  }
}

TEST(Labeled, AnotherProgramsMasksFailLoudly) {
  LabRun run(Scheme::kJoyeLibert);
  auto server = evaluate(run.plan, Mode::kServer, run.setup.pk.msg_modulus, &run.setup.pk,
                         assemble_uploads(run.plan, run.setup, run.uploads()));
  // The same shapes, another program: the scatter without the factor 6.
  std::string other = kPlan;
  other.replace(other.find("mulc 2 6"), 8, "mulc 2 5");
  Plan wrong = Plan::parse(other);
  EXPECT_NE(wrong.digest, run.plan.digest);
  auto mask = evaluate(wrong, Mode::kMask, run.setup.pk.msg_modulus, nullptr, run.masks());
  EXPECT_THROW(run.decrypt_all(wrong, server, mask, 0), std::runtime_error);
}

TEST(Plan, RefusesDegreeThreeAndMalformedText) {
  std::string cubic =
      "hec-labhe-plan 1\nprogram p\nmessage_bits 8\nv 0 input x 1 0\n"
      "v 1 contract 0 0 ,->\nv 2 contract 1 0 ,->\nreveal y 2 1 10\n";
  try {
    Plan::parse(cubic);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("degree > 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 6"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Plan::parse("nonsense"), std::invalid_argument);
  EXPECT_THROW(Plan::parse("hec-labhe-plan 1\nprogram p\nmessage_bits 8\nv 0 add 1 2\n"),
               std::invalid_argument);
}

}  // namespace
}  // namespace hec::labhe
