// Tests for program/bfv_program.h: a hand-written BFV program over the program layer, written as
// targets/cpp would generate one (a ProgramSpec and a compute function over Server), run through
// run_main's four roles: two integer inputs y[N] (replicated) and S[N, M] (packed, two
// ciphertexts per row), the column sums of S (a row accumulator), y @ S (a fused dot product
// over rows, relinearized), a product with relinearization, sum_slots over all N slots, integer
// constants, a cyclic rotation over N slots, sub and negate, and public plaintext operands
// (mul_plain, add_plain). Every result is checked exactly against plain
// integer arithmetic. Parameters: N = 2^12, Q = two 50-bit primes, t = 65537 (128-bit secure by
// the HE Standard table: log2 Q = 100 <= 109; no --insecure). Negative tests: a non-integer and
// an out-of-range input value are refused naming the input, the sample and the column.
#include "program/bfv_program.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "math/primes.h"
#include "program/npy.h"
#include "tests/program/test_dir.h"

namespace hec::program::bfv_program {
namespace {

using testing::TempDir;

constexpr std::uint64_t kT = 65537;
constexpr std::size_t kRows = 6;     // N, the stream dimension
constexpr std::size_t kCols = 4100;  // M: two ciphertexts of 4096 slots per row
constexpr int kRotation = 5;

ProgramSpec spec() {
  ProgramSpec s;
  s.name = "bfv_hand";
  s.source = "bfv_program_test.cpp";
  s.digest = std::string(64, 'b');
  s.log_n = 12;
  s.plain_modulus = kT;
  s.moduli = math::ntt_primes(50, 2, 4096, {kT});
  s.dnum = 2;
  s.security_bits = 128;
  s.relinearizes = true;
  // sum_slots: row rotations by 1, 2, ..., N/4 (and the row swap keygen adds); rotate by 5.
  for (int r = 1; r <= 1024; r <<= 1) s.rotations.push_back(r);
  s.rotations.push_back(kRotation);
  s.params = {{"N", 64}, {"M", 8192}};
  s.stream_dim = "N";
  s.sources.push_back({"y", {"N"}, Domain{}});
  s.sources.push_back({"S", {"N", "M"}, Domain{}});
  s.inputs.push_back({.id = "y",
                      .source = "y",
                      .layout = Layout::kReplicated,
                      .dims = {"N"},
                      .streamed = true,
                      .domain = Domain{}});
  s.inputs.push_back({.id = "S",
                      .source = "S",
                      .layout = Layout::kPacked,
                      .dims = {"N", "M"},
                      .streamed = true,
                      .domain = Domain{}});
  for (const char* name :
       {"colsum", "yS", "colsum_sq", "shifted", "rotated", "both", "weighted", "offset"}) {
    s.outputs.push_back({.name = name, .layout = Layout::kPacked, .dims = {"M"}});
  }
  s.outputs.push_back({.name = "total", .layout = Layout::kReplicated, .dims = {}});
  return s;
}

// Public integer weights of the plaintext operands (mul_plain, add_plain).
std::int64_t weight(std::size_t column) { return static_cast<std::int64_t>(column % 7) - 3; }

// The compute function, as the emitter writes one: a pass over the rows with a sum and a dot
// product accumulator, then the global ops on the sums.
void compute(Server& server) {
  const Ops& ops = server.ops();
  SumSink colsum_sum(ops, server.threads());
  DotSink yS_sum(ops, server.threads());
  server.stream("pass 0", {"y", "S"},
                [&]([[maybe_unused]] std::size_t row, const std::vector<CtArray>& in, int thread) {
                  const CtArray& y =
                      in[0];  // this row's y (one ciphertext, the value in every slot)
                  const CtArray& S = in[1];  // this row of S (two ciphertexts)
                  const CtArray y_b = broadcast(y, {}, S.shape, true);
                  colsum_sum.add(thread, S);
                  yS_sum.add(thread, y_b, S);
                },
                {&colsum_sum, &yS_sum});
  const CtArray colsum = colsum_sum.finish();
  expect_type(colsum, "colsum", 1, 1);
  const CtArray yS = relinearize(ops, yS_sum.finish());
  expect_type(yS, "yS", 1, 1);
  const CtArray sq = relinearize(ops, mul(ops, colsum, colsum));
  const CtArray shifted = add_const(ops, mul_const(ops, colsum, -3), 7);
  const CtArray total = sum_slots(ops, colsum);
  const CtArray rotated = rotate(ops, colsum, kRotation);
  const CtArray both = sub(ops, colsum, negate(ops, yS));
  std::vector<std::int64_t> w(server.size("M"));
  for (std::size_t c = 0; c < w.size(); ++c) w[c] = weight(c);
  const PtArray w_pt = encode_plain(ops, Layout::kPacked, {w.size()}, w);
  const CtArray weighted = mul_plain(ops, colsum, w_pt);
  const CtArray offset = add_plain(ops, colsum, w_pt);
  server.output("colsum", colsum);
  server.output("yS", yS);
  server.output("colsum_sq", sq);
  server.output("shifted", shifted);
  server.output("total", total);
  server.output("rotated", rotated);
  server.output("both", both);
  server.output("weighted", weighted);
  server.output("offset", offset);
}

int run(std::vector<std::string> args) {
  args.insert(args.begin(), "bfv_hand");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return run_main(spec(), compute, static_cast<int>(argv.size()), argv.data());
}

struct Data {
  std::vector<std::int64_t> y, S;  // S row-major [kRows][kCols]
};

Data random_data() {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> small(-9, 9);
  Data d;
  for (std::size_t r = 0; r < kRows; ++r) d.y.push_back(small(rng));
  for (std::size_t i = 0; i < kRows * kCols; ++i) d.S.push_back(small(rng));
  return d;
}

std::vector<std::int64_t> read_ints(const std::filesystem::path& path) {
  const NpyArray a = read_npy(path);
  EXPECT_EQ(a.descr, "<i8") << path;
  std::vector<std::int64_t> out;
  for (double v : a.data) out.push_back(static_cast<std::int64_t>(v));
  return out;
}

TEST(BfvProgram, FourRolesMatchIntegerArithmeticExactly) {
  TempDir dir;
  const Data d = random_data();
  write_npy_int64(dir / "y.npy", {kRows}, d.y);
  write_npy_int64(dir / "S.npy", {kRows, kCols}, d.S);
  ASSERT_EQ(run({"keygen", "--out", (dir / "keys").string(), "--rows", std::to_string(kRows)}), 0);
  struct stat st {};
  ASSERT_EQ(::stat((dir / "keys" / "secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(std::filesystem::exists(dir / "keys" / "eval" / "relin"));
  EXPECT_TRUE(std::filesystem::exists(dir / "keys" / "eval" / "galois"));
  ASSERT_EQ(run({"encrypt", "--pk", (dir / "keys" / "public").string(), "--input",
                 "y=" + (dir / "y.npy").string(), "--input", "S=" + (dir / "S.npy").string(),
                 "--out", (dir / "cts").string()}),
            0);
  ASSERT_EQ(run({"compute", "--eval", (dir / "keys" / "eval").string(), "--in",
                 (dir / "cts").string(), "--out", (dir / "res").string()}),
            0);
  ASSERT_EQ(run({"decrypt", "--sk", (dir / "keys" / "secret").string(), "--in",
                 (dir / "res").string(), "--out", (dir / "out").string()}),
            0);

  std::vector<std::int64_t> colsum(kCols, 0), yS(kCols, 0);
  for (std::size_t r = 0; r < kRows; ++r) {
    for (std::size_t c = 0; c < kCols; ++c) {
      colsum[c] += d.S[r * kCols + c];
      yS[c] += d.y[r] * d.S[r * kCols + c];
    }
  }
  std::vector<std::int64_t> sq(kCols), shifted(kCols);
  std::int64_t total = 0;
  for (std::size_t c = 0; c < kCols; ++c) {
    sq[c] = colsum[c] * colsum[c];
    shifted[c] = -3 * colsum[c] + 7;
    total += colsum[c];
  }
  EXPECT_EQ(read_ints(dir / "out" / "colsum.npy"), colsum);
  EXPECT_EQ(read_ints(dir / "out" / "yS.npy"), yS);
  EXPECT_EQ(read_ints(dir / "out" / "colsum_sq.npy"), sq);
  EXPECT_EQ(read_ints(dir / "out" / "shifted.npy"), shifted);
  EXPECT_EQ(read_ints(dir / "out" / "total.npy"), std::vector<std::int64_t>{total});
  std::vector<std::int64_t> both(kCols), weighted(kCols), offset(kCols);
  for (std::size_t c = 0; c < kCols; ++c) {
    both[c] = colsum[c] + yS[c];
    weighted[c] = colsum[c] * weight(c);
    offset[c] = colsum[c] + weight(c);
  }
  EXPECT_EQ(read_ints(dir / "out" / "both.npy"), both);
  EXPECT_EQ(read_ints(dir / "out" / "weighted.npy"), weighted);
  EXPECT_EQ(read_ints(dir / "out" / "offset.npy"), offset);
  // A cyclic rotation over the N = 4096 slots of each block: block b's slot j holds column
  // b * 4096 + (j + 5) mod 4096 of the block (zero past the last column).
  const std::vector<std::int64_t> rotated = read_ints(dir / "out" / "rotated.npy");
  ASSERT_EQ(rotated.size(), kCols);
  for (std::size_t c = 0; c < kCols; ++c) {
    const std::size_t block = c / 4096, j = (c % 4096 + kRotation) % 4096;
    const std::size_t source = block * 4096 + j;
    EXPECT_EQ(rotated[c], source < kCols ? colsum[source] : 0) << "column " << c;
  }
}

TEST(BfvProgram, EncryptRefusesANonIntegerValueNamingSampleAndColumn) {
  TempDir dir;
  Data d = random_data();
  std::vector<double> S(d.S.begin(), d.S.end());
  S[3 * kCols + 17] = 2.5;
  write_npy_int64(dir / "y.npy", {kRows}, d.y);
  write_npy(dir / "S.npy", {kRows, kCols}, S);
  ASSERT_EQ(run({"keygen", "--out", (dir / "keys").string()}), 0);
  ::testing::internal::CaptureStderr();
  const int rc = run({"encrypt", "--pk", (dir / "keys" / "public").string(), "--input",
                      "y=" + (dir / "y.npy").string(), "--input", "S=" + (dir / "S.npy").string(),
                      "--out", (dir / "cts").string()});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("input 'S' sample 3 column 17 is 2.5, not an integer"), std::string::npos)
      << err;
  EXPECT_FALSE(std::filesystem::exists(dir / "cts" / "S.rows-0-6.cts"));
}

TEST(BfvProgram, EncryptRefusesAValueOutsideThePlaintextRange) {
  TempDir dir;
  Data d = random_data();
  d.y[4] = 40000;  // > (t - 1) / 2 = 32768
  write_npy_int64(dir / "y.npy", {kRows}, d.y);
  write_npy_int64(dir / "S.npy", {kRows, kCols}, d.S);
  ASSERT_EQ(run({"keygen", "--out", (dir / "keys").string()}), 0);
  ::testing::internal::CaptureStderr();
  const int rc = run({"encrypt", "--pk", (dir / "keys" / "public").string(), "--input",
                      "y=" + (dir / "y.npy").string(), "--input", "S=" + (dir / "S.npy").string(),
                      "--out", (dir / "cts").string()});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("input 'y' sample 4 is 40000, outside the plaintext range [-32768, 32768]"),
            std::string::npos)
      << err;
}

// Regression (found by the fuzzer): a header announcing more ciphertexts than the payload can
// hold is refused before anything is allocated for them.
TEST(BfvProgram, ArrayFileAnnouncingMoreCiphertextsThanItHoldsIsRefused) {
  TempDir dir;
  const ProgramSpec s = spec();
  const auto ctx = BfvScheme::make_context(s);
  bfv::KeyGenerator gen(ctx);
  bfv::Encryptor encryptor(ctx, gen.make_public_key());
  const Ct ct = encryptor.encrypt(bfv::Encoder(ctx).encode_scalar(5));
  const auto path = dir / "a.cts";
  BfvScheme::save_array(path, *ctx, ct.key_id, {&ct});
  ASSERT_EQ(BfvScheme::load_array(path, *ctx, ct.key_id).size(), 1u);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(72);  // the header's count (core/serialize.h), little-endian u32
    const char count[4] = {0, 0, 0, 0x10};
    f.write(count, 4);
  }
  try {
    (void)BfvScheme::load_array(path, *ctx, ct.key_id);
    FAIL() << "a count of 2^28 was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("announces 268435456 ciphertexts"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hec::program::bfv_program
