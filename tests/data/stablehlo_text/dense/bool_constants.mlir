// Boolean constants, splat and not, of 1 to 9 elements, and the ops StableHLO's own boolean
// tests use them with. Every output is true but where a comment says otherwise:
// out0..out5 = dense<true> of 2, 4, 8, 2x3, 1 and 9 elements;
// out6 = [true, false, false, true]; out7 = out3[1:2, 0:3] (slice, all true);
// out8 = select(out1, out6, false) = out6; out9 = select(dense<false>, out1, out6) = out6;
// out10 = dense<false> of 5 elements (all false); out11 = not(out10) (all true).
func.func public @main() -> (tensor<2xi1>, tensor<4xi1>, tensor<8xi1>, tensor<2x3xi1>, tensor<1xi1>, tensor<9xi1>, tensor<4xi1>, tensor<1x3xi1>, tensor<4xi1>, tensor<4xi1>, tensor<5xi1>, tensor<5xi1>) {
  %t2 = stablehlo.constant dense<true> : tensor<2xi1>
  %t4 = stablehlo.constant dense<true> : tensor<4xi1>
  %t8 = stablehlo.constant dense<true> : tensor<8xi1>
  %t23 = stablehlo.constant dense<true> : tensor<2x3xi1>
  %t1 = stablehlo.constant dense<true> : tensor<1xi1>
  %t9 = stablehlo.constant dense<true> : tensor<9xi1>
  %mixed = stablehlo.constant dense<[true, false, false, true]> : tensor<4xi1>
  %row = stablehlo.slice %t23 [1:2, 0:3] : (tensor<2x3xi1>) -> tensor<1x3xi1>
  %f4 = stablehlo.constant dense<false> : tensor<4xi1>
  %sel = stablehlo.select %t4, %mixed, %f4 : tensor<4xi1>, tensor<4xi1>
  %sel2 = stablehlo.select %f4, %t4, %mixed : tensor<4xi1>, tensor<4xi1>
  %f5 = stablehlo.constant dense<false> : tensor<5xi1>
  %nf5 = stablehlo.not %f5 : tensor<5xi1>
  return %t2, %t4, %t8, %t23, %t1, %t9, %mixed, %row, %sel, %sel2, %f5, %nf5 : tensor<2xi1>, tensor<4xi1>, tensor<8xi1>, tensor<2x3xi1>, tensor<1xi1>, tensor<9xi1>, tensor<4xi1>, tensor<1x3xi1>, tensor<4xi1>, tensor<4xi1>, tensor<5xi1>, tensor<5xi1>
}
