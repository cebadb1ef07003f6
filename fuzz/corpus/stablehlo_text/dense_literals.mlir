func.func public @main() -> (tensor<4xi1>, tensor<2x3xi1>, tensor<9xi1>, tensor<0xi1>, tensor<3xi1>, tensor<2xi4>, tensor<3xui2>, tensor<2xcomplex<f32>>, tensor<0x2xf32>, tensor<4xf8E4M3FN>, tensor<2xbf16>, tensor<i1>) {
  %0 = stablehlo.constant dense<true> : tensor<4xi1>
  %1 = stablehlo.constant dense<[[true, false, true], [false, false, true]]> : tensor<2x3xi1>
  %2 = stablehlo.constant dense<"0x010001000100010001"> : tensor<9xi1>
  %3 = stablehlo.constant dense<> : tensor<0xi1>
  %4 = stablehlo.constant dense<"0xFF"> : tensor<3xi1>
  %5 = stablehlo.constant dense<[-8, 7]> : tensor<2xi4>
  %6 = stablehlo.constant dense<3> : tensor<3xui2>
  %7 = stablehlo.constant dense<(1.5, -2.0)> : tensor<2xcomplex<f32>>
  %8 = stablehlo.constant dense<"0x0000803F"> : tensor<0x2xf32>
  %9 = stablehlo.constant dense<[0x38, 0x7E, 0x80, 0x01]> : tensor<4xf8E4M3FN>
  %10 = stablehlo.constant dense<"0x803F0040"> : tensor<2xbf16>
  %11 = stablehlo.constant dense<false> : tensor<i1>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<4xi1>, tensor<2x3xi1>, tensor<9xi1>, tensor<0xi1>, tensor<3xi1>, tensor<2xi4>, tensor<3xui2>, tensor<2xcomplex<f32>>, tensor<0x2xf32>, tensor<4xf8E4M3FN>, tensor<2xbf16>, tensor<i1>
}
