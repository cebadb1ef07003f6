// dynamic_gather and dynamic_conv: out0 is rows 1 and 0 of x (n x 3); out1[i] = y[i] + y[i + 1]
// for y of n elements (a width-2 window of ones, no padding).
func.func public @main(%x: tensor<?x3xf32>, %y: tensor<1x?x1xf32>) -> (tensor<2x3xf32>, tensor<1x?x1xf32>) {
  %idx = stablehlo.constant dense<[[1], [0]]> : tensor<2x1xi32>
  %sizes = stablehlo.constant dense<[1, 3]> : tensor<2xi32>
  %rows = "stablehlo.dynamic_gather"(%x, %idx, %sizes) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>}> : (tensor<?x3xf32>, tensor<2x1xi32>, tensor<2xi32>) -> tensor<2x3xf32>
  %w = stablehlo.constant dense<1.0> : tensor<2x1x1xf32>
  %pad = stablehlo.constant dense<0> : tensor<1x2xi32>
  %sums = "stablehlo.dynamic_conv"(%y, %w, %pad) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>, feature_group_count = 1 : i64}> : (tensor<1x?x1xf32>, tensor<2x1x1xf32>, tensor<1x2xi32>) -> tensor<1x?x1xf32>
  return %rows, %sums : tensor<2x3xf32>, tensor<1x?x1xf32>
}
