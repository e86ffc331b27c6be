// The roles of a generated program (the PNAS setting: Blatt et al. 2020; DESIGN.md §6), written
// once for every scheme in roles_impl.h over a *scheme binding* S:
//
//   keygen  --out KEYDIR                    coordinator: KEYDIR/secret, KEYDIR/public and
//                                           KEYDIR/eval/ (only the keys the program needs)
//   encrypt --pk KEYDIR/public --input NAME=FILE.npy ... [--rows a:b] --out CTDIR
//                                           data owner (several owners may each encrypt rows)
//   compute --eval KEYDIR/eval --in CTDIR --out RESDIR
//                                           server: evaluation keys only, streams over rows
//   decrypt --sk KEYDIR/secret --in RESDIR --out DIR [--no-flooding]
//                                           coordinator: one NAME.npy per revealed value
//   info FILE                               the header of any key, ciphertext or array file
//
// A binding S (program/ckks_program.h: CkksScheme, program/bfv_program.h: BfvScheme) is a
// traits type with these members; the roles call nothing else of the scheme:
//
//   Ct, Context, ContextPtr, Ops         ciphertext, context, and what the array ops need
//   Value, kNpyDescr                     the decrypted element type and its .npy dtype
//   make_context(spec) -> ContextPtr     parameters from the program's description
//   slots(ctx), params_digest(ctx)
//   make_keys(spec, ctx, dir, outputs) -> KeyId
//                                        KEYDIR/secret (0600), public, eval/relin, eval/galois
//   check_values(spec, source, file, npy) an encrypt-time check beyond the declared domain
//   Encoder(ctx, pk_path, key_id)        encrypt_row(RowToEncrypt, Ct* out), record_bytes(in)
//   ArrayWriter(path, ctx, key_id, count, payload_bytes), append(ct), finish()
//   ArrayReader(path, ctx, key_id, content), count(), next_batch(out, count, threads), finish()
//   save_array(path, ctx, key_id, vector<const Ct*>),
//   load_array(path, ctx, key_id, content) -> vector<Ct>
//     (content: the digest the file's signed .meta binds, core::Expectation::content; every
//     read of an upload or a result passes it, so what is read is what was checked)
//   EvalKeys, load_eval_keys(spec, ctx, eval_dir, key_id), make_ops(ctx, keys) -> Ops
//   Decoder(ctx, sk_path)                key_id(), decrypt_output(out, file, dims&, arr, factor,
//                                        load) -> vector<Value>
//
// Why a traits type and templates rather than a virtual interface: the roles and the server
// touch a ciphertext per call (encrypt a row, read a chunk of ciphertexts into reused storage,
// fold accumulators), and the array ops the generated code calls are the binding's own
// functions on its own ciphertext type, so the compiler sees concrete types everywhere and
// nothing is virtual below the row sinks. The templates are instantiated once per scheme, in the
// binding's .cpp file (run_roles<S>), so a generated program compiles none of this code.
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "program/args.h"
#include "program/npy.h"
#include "program/spec.h"

namespace hec::program {

// One row (or a whole, not streamed, array) of an input for the binding to encode and encrypt
// into product(local_arr) ciphertexts.
struct RowToEncrypt {
  const InputSpec& in;
  std::size_t row;                            // the row's index in the owner's files (0: whole)
  const double* values;                       // product(local) values, C order (owner-side
                                              // values already formed)
  const OwnerRow& owner_row;                  // the sources' row (read by the coeff layout)
  const std::vector<std::size_t>& local;      // the logical row-local shape
  const std::vector<std::size_t>& local_arr;  // its ciphertext-array shape
};

namespace roles {

// The declared-domain check of an input's values (encrypt); names the file, input and element.
void check_domain(const SourceSpec& in, const std::filesystem::path& file, const NpyArray& a);
// signkey --out FILE: an Ed25519 signing key for a party (no scheme involved).
int signkey(const ParsedArgs& args);
// The subcommands and their options (the same for every scheme).
CommandLine command_line(const ProgramSpec& spec);
void write_values(const std::filesystem::path& path, const std::vector<std::size_t>& dims,
                  const std::vector<double>& values);
void write_values(const std::filesystem::path& path, const std::vector<std::size_t>& dims,
                  const std::vector<std::int64_t>& values);

}  // namespace roles
}  // namespace hec::program
