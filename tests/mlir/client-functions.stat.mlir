"builtin.module"() ({
  "func.func"() <{sym_name = "client_functions", function_type = () -> ()}> ({
    "stat.param"() {bound = 64 : i64, sym = "N"} : () -> ()
    %x = "stat.input"() {domain = #stat.interval<0.000000e+00 : f64, 6.000000e+01 : f64>, sym = "x"} : () -> !stat.tensor<["N"], "secret">
    %v_revealed = "stat.reveal"(%x) {sym = "v"} : (!stat.tensor<["N"], "secret">) -> !stat.tensor<["N"], "public">
    "scf.execute_region"() ({
      %c1 = "stat.chi2_sf"(%v_revealed) {df = 1 : i64} : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      "stat.output"(%c1) {sym = "c1"} : (!stat.tensor<["N"], "public">) -> ()
      %c2 = "stat.chi2_sf"(%v_revealed) {df = 2 : i64} : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      "stat.output"(%c2) {sym = "c2"} : (!stat.tensor<["N"], "public">) -> ()
      %c3 = "stat.chi2_sf"(%v_revealed) {df = 3 : i64} : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      "stat.output"(%c3) {sym = "c3"} : (!stat.tensor<["N"], "public">) -> ()
      %c4 = "stat.chi2_sf"(%v_revealed) {df = 4 : i64} : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      "stat.output"(%c4) {sym = "c4"} : (!stat.tensor<["N"], "public">) -> ()
      %c7 = "stat.chi2_sf"(%v_revealed) {df = 7 : i64} : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      "stat.output"(%c7) {sym = "c7"} : (!stat.tensor<["N"], "public">) -> ()
      %0 = "stat.constant"() {value = 8.000000e+00 : f64} : () -> !stat.tensor<[], "public">
      %1 = "stat.broadcast"(%0) {dims = array<i64>} : (!stat.tensor<[], "public">) -> !stat.tensor<["N"], "public">
      %2 = "stat.div"(%v_revealed, %1) : (!stat.tensor<["N"], "public">, !stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %3 = "stat.constant"() {value = 1.000000e+00 : f64} : () -> !stat.tensor<[], "public">
      %4 = "stat.broadcast"(%3) {dims = array<i64>} : (!stat.tensor<[], "public">) -> !stat.tensor<["N"], "public">
      %5 = "stat.sub"(%2, %4) : (!stat.tensor<["N"], "public">, !stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %ns = "stat.norm_sf"(%5) : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      "stat.output"(%ns) {sym = "ns"} : (!stat.tensor<["N"], "public">) -> ()
      %6 = "stat.div"(%v_revealed, %1) : (!stat.tensor<["N"], "public">, !stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %7 = "stat.sub"(%6, %4) : (!stat.tensor<["N"], "public">, !stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %nc = "stat.norm_cdf"(%7) : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      "stat.output"(%nc) {sym = "nc"} : (!stat.tensor<["N"], "public">) -> ()
      %8 = "stat.sqrt"(%v_revealed) : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %9 = "stat.constant"() {value = 3.000000e+01 : f64} : () -> !stat.tensor<[], "public">
      %10 = "stat.broadcast"(%9) {dims = array<i64>} : (!stat.tensor<[], "public">) -> !stat.tensor<["N"], "public">
      %11 = "stat.sub"(%v_revealed, %10) : (!stat.tensor<["N"], "public">, !stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %12 = "stat.abs"(%11) : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %13 = "stat.add"(%8, %12) : (!stat.tensor<["N"], "public">, !stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %14 = "stat.constant"() {value = 1.000000e+01 : f64} : () -> !stat.tensor<[], "public">
      %15 = "stat.broadcast"(%14) {dims = array<i64>} : (!stat.tensor<[], "public">) -> !stat.tensor<["N"], "public">
      %16 = "stat.div"(%v_revealed, %15) : (!stat.tensor<["N"], "public">, !stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %17 = "stat.exp"(%16) : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %18 = "stat.add"(%13, %17) : (!stat.tensor<["N"], "public">, !stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %19 = "stat.add"(%v_revealed, %4) : (!stat.tensor<["N"], "public">, !stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %20 = "stat.log"(%19) : (!stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      %r = "stat.add"(%18, %20) : (!stat.tensor<["N"], "public">, !stat.tensor<["N"], "public">) -> !stat.tensor<["N"], "public">
      "stat.output"(%r) {sym = "r"} : (!stat.tensor<["N"], "public">) -> ()
      "scf.yield"() : () -> ()
    }) {hec.op = "stat.client"} : () -> ()
    "func.return"() : () -> ()
  }) {hec.op = "stat.program"} : () -> ()
}) : () -> ()
