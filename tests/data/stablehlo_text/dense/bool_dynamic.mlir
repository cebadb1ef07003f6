// A boolean constant beside a `?` dimension, so `pjrt run` refines the program first:
// out0 = x (n elements); out1 = dense<true> of 4 elements (all true); out2 = x > 0 broadcast
// with [true, false, true] (x of 3 elements: [x0 > 0, false, x2 > 0]).
func.func public @main(%x: tensor<?xf32>) -> (tensor<?xf32>, tensor<4xi1>, tensor<3xi1>) {
  %t4 = stablehlo.constant dense<true> : tensor<4xi1>
  %zero = stablehlo.constant dense<0.0> : tensor<3xf32>
  %x3 = stablehlo.slice %x [0:3] : (tensor<?xf32>) -> tensor<3xf32>
  %pos = stablehlo.compare GT, %x3, %zero : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %mask = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
  %both = stablehlo.and %pos, %mask : tensor<3xi1>
  return %x, %t4, %both : tensor<?xf32>, tensor<4xi1>, tensor<3xi1>
}
