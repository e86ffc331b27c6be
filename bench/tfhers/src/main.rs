//! tfhe-rs side of `bench/run fhew`: Boolean gates at tfhe-rs' default Boolean parameters and
//! FheUint8 add / multiply / compare at the high-level API's default configuration, written
//! the way the tfhe-rs documentation uses the crate (`tfhe::boolean::gen_keys` and the
//! `BinaryBooleanGates` methods of the server key; `ConfigBuilder::default()`, `generate_keys`,
//! `set_server_key` and the operators on `FheUint8`).
//!
//! Usage: hec-tfhers-reference REPEATS [BATCH [only]] ("only": the batch row alone). The caller sets RAYON_NUM_THREADS (the integer
//! operations run on rayon; one Boolean gate is single-threaded). With BATCH > 0, also BATCH
//! independent NANDs at once on rayon's pool (`par_iter` over the gates with one shared server
//! key: each worker thread has its own tfhe-rs engine), reported per gate as `nand_batch`:
//! how a tfhe-rs user spreads independent gates over cores. Every timed result is decrypted
//! and checked. Prints one JSON object: the tfhe version, the documented security and failure
//! probability of each parameter set, and per operation the median wall and process CPU
//! milliseconds over at least REPEATS runs after one warm-up run, more until the timed runs
//! fill a quarter second (at most 1000): the repeat rule of the other sides (bench/common.py,
//! runtime/bench/repeats.h). Runs beyond REPEATS reuse the inputs in turn.

use std::time::Instant;

use rayon::prelude::*;

use tfhe::boolean::prelude::{gen_keys, BinaryBooleanGates, Ciphertext, ServerKey};
use tfhe::prelude::{FheDecrypt, FheEncrypt, FheOrd};
use tfhe::{generate_keys, set_server_key, ConfigBuilder, FheUint8};

/// Process CPU time (user + system) in seconds: counts rayon's worker threads too.
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

const MIN_MEASURED_SECONDS: f64 = 0.25;
const MAX_REPEATS: usize = 1000;

/// Runs `op(0)` once unmeasured and then `op(1)`, `op(2)`, ... under the repeat rule (at least
/// `repeats` runs, more until their wall time adds up to MIN_MEASURED_SECONDS, at most
/// MAX_REPEATS), run k getting input k mod `inputs` (the inputs reused in turn past them);
/// `check(i, result)` must hold for every run. Returns (median wall ms, median CPU ms, timed
/// runs).
fn time_op<T>(
    repeats: usize,
    inputs: usize,
    mut op: impl FnMut(usize) -> T,
    mut check: impl FnMut(usize, T) -> bool,
) -> (f64, f64, usize) {
    let warm = op(0);
    assert!(check(0, warm), "a warm-up result decrypted wrongly");
    let mut wall = Vec::with_capacity(repeats);
    let mut cpu = Vec::with_capacity(repeats);
    let mut total = 0.0;
    while wall.len() < repeats || (total < MIN_MEASURED_SECONDS && wall.len() < MAX_REPEATS) {
        let i = (wall.len() + 1) % inputs;
        let c0 = cpu_seconds();
        let t0 = Instant::now();
        let out = op(i);
        let seconds = t0.elapsed().as_secs_f64();
        total += seconds;
        wall.push(seconds * 1e3);
        cpu.push((cpu_seconds() - c0) * 1e3);
        assert!(
            check(i, out),
            "a timed result decrypted wrongly (run {}, input {i})",
            wall.len()
        );
    }
    let runs = wall.len();
    (median(wall), median(cpu), runs)
}

fn field(name: &str, (wall, cpu, runs): (f64, f64, usize)) -> String {
    format!("\"{name}\": {{\"wall_ms\": {wall}, \"cpu_ms\": {cpu}, \"runs\": {runs}}}")
}

fn main() {
    let repeats: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or_else(|| {
            eprintln!("usage: hec-tfhers-reference REPEATS [BATCH] (positive integers)");
            std::process::exit(2)
        });
    let batch: usize = match std::env::args().nth(2) {
        None => 0,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!("hec-tfhers-reference: BATCH must be a non-negative integer, got {s}");
            std::process::exit(2)
        }),
    };
    let batch_only = match std::env::args().nth(3).as_deref() {
        None => false,
        Some("only") if batch > 0 => true,
        Some(other) => {
            eprintln!("hec-tfhers-reference: the third argument can only be `only`, got {other}");
            std::process::exit(2)
        }
    };
    let mut fields = Vec::new();

    // Boolean gates, DEFAULT_PARAMETERS (what gen_keys uses).
    let (cks, sks) = gen_keys();
    let bit = |i: usize, k: usize| (i >> k) & 1 == 1;
    let enc = |b: bool| -> Ciphertext { cks.encrypt(b) };
    let inputs: Vec<[Ciphertext; 3]> = (0..=repeats)
        .map(|i| [enc(bit(i, 0)), enc(bit(i, 1)), enc(bit(i, 2))])
        .collect();
    type Gate = fn(&ServerKey, &Ciphertext, &Ciphertext, &Ciphertext) -> Ciphertext;
    let gates: [(&str, Gate, fn(bool, bool, bool) -> bool); 4] = [
        ("nand", |s, a, b, _| s.nand(a, b), |a, b, _| !(a && b)),
        ("and", |s, a, b, _| s.and(a, b), |a, b, _| a && b),
        ("xor", |s, a, b, _| s.xor(a, b), |a, b, _| a ^ b),
        (
            "mux",
            |s, a, b, c| s.mux(a, b, c),
            |a, b, c| if a { b } else { c },
        ),
    ];
    for (name, gate, truth) in gates.into_iter().filter(|_| !batch_only) {
        let t = time_op(
            repeats,
            inputs.len(),
            |i| {
                let [a, b, c] = &inputs[i];
                gate(&sks, a, b, c)
            },
            |i, out| cks.decrypt(&out) == truth(bit(i, 0), bit(i, 1), bit(i, 2)),
        );
        fields.push(field(name, t));
    }
    if batch > 0 {
        // Run r uses gates r .. r + batch of a longer input list (r < repeats + 1: each of the
        // first REPEATS runs its own inputs).
        let batch_inputs: Vec<(Ciphertext, Ciphertext)> = (0..batch + repeats)
            .map(|i| (enc(bit(i, 0)), enc(bit(i, 1))))
            .collect();
        let (wall, cpu, runs) = time_op(
            repeats,
            repeats + 1,
            |r| {
                batch_inputs[r..r + batch]
                    .par_iter()
                    .map(|(a, b)| sks.nand(a, b))
                    .collect::<Vec<Ciphertext>>()
            },
            |r, outs| {
                outs.iter()
                    .enumerate()
                    .all(|(k, out)| cks.decrypt(out) == !(bit(r + k, 0) && bit(r + k, 1)))
            },
        );
        let per_gate = (wall / batch as f64, cpu / batch as f64, runs);
        fields.push(field("nand_batch", per_gate));
    }

    if batch_only {
        println!(
            "{{\"repeats\": {repeats}, \"batch\": {batch}, \"rayon_threads\": {}, {}}}",
            rayon_threads(),
            fields.join(", ")
        );
        return;
    }

    // FheUint8 through the high-level API, default configuration.
    let config = ConfigBuilder::default().build();
    let (client_key, server_key) = generate_keys(config);
    set_server_key(server_key);
    let value = |i: usize, k: usize| ((i * 37 + k * 101 + 11) % 256) as u8;
    let pairs: Vec<(FheUint8, FheUint8)> = (0..=repeats)
        .map(|i| {
            (
                FheUint8::encrypt(value(i, 0), &client_key),
                FheUint8::encrypt(value(i, 1), &client_key),
            )
        })
        .collect();
    let dec = |c: &FheUint8| -> u8 { c.decrypt(&client_key) };
    let add = time_op(
        repeats,
        pairs.len(),
        |i| &pairs[i].0 + &pairs[i].1,
        |i, out| dec(&out) == value(i, 0).wrapping_add(value(i, 1)),
    );
    fields.push(field("uint8_add", add));
    let mul = time_op(
        repeats,
        pairs.len(),
        |i| &pairs[i].0 * &pairs[i].1,
        |i, out| dec(&out) == value(i, 0).wrapping_mul(value(i, 1)),
    );
    fields.push(field("uint8_mul", mul));
    let gt = time_op(
        repeats,
        pairs.len(),
        |i| pairs[i].0.gt(&pairs[i].1),
        |i, out| {
            let got: bool = out.decrypt(&client_key);
            got == (value(i, 0) > value(i, 1))
        },
    );
    fields.push(field("uint8_gt", gt));

    println!(
        "{{\"repeats\": {repeats}, \"batch\": {batch}, \"rayon_threads\": {}, {}}}",
        rayon_threads(),
        fields.join(", ")
    );
}

fn rayon_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
