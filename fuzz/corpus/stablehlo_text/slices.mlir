// real_dynamic_slice, dynamic_slice and dynamic_update_slice on x of n x 4:
// out0 = x[1:n, 0:4:2]; out1 = x[0:1, 1:3]; out2 = x with row 0 set to ones.
func.func public @main(%x: tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<1x2xf32>, tensor<?x4xf32>) {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %four = stablehlo.constant dense<4> : tensor<1xi32>
  %start = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %limit = stablehlo.concatenate %n1, %four, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %strides = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %tail = stablehlo.real_dynamic_slice %x, %start, %limit, %strides : (tensor<?x4xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x2xf32>
  %i = stablehlo.constant dense<0> : tensor<i32>
  %j = stablehlo.constant dense<1> : tensor<i32>
  %piece = stablehlo.dynamic_slice %x, %i, %i, sizes = [1, 2] : (tensor<?x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x2xf32>
  %piece2 = stablehlo.dynamic_slice %x, %i, %j, sizes = [1, 2] : (tensor<?x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x2xf32>
  %ones = stablehlo.constant dense<1.0> : tensor<1x4xf32>
  %updated = stablehlo.dynamic_update_slice %x, %ones, %i, %i : (tensor<?x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<?x4xf32>
  return %tail, %piece2, %updated : tensor<?x2xf32>, tensor<1x2xf32>, tensor<?x4xf32>
}
