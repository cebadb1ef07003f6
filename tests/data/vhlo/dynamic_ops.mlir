module {
  func.func public @main(%arg0: tensor<?x4xf32>, %arg1: tensor<2x1xi32>, %arg2: tensor<3x3x1x1xf32>, %arg3: tensor<1x5x5x1xf32>, %arg4: tensor<2x2xi32>, %arg5: tensor<2xi32>) -> (tensor<2x4xf32>, tensor<1x5x5x1xf32>, tensor<?x?xf32>, tensor<?xi32>) {
    %c = stablehlo.constant dense<[1, 4]> : tensor<2xi32>
    %0 = "stablehlo.dynamic_gather"(%arg0, %arg1, %c) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = true}> : (tensor<?x4xf32>, tensor<2x1xi32>, tensor<2xi32>) -> tensor<2x4xf32>
    %1 = "stablehlo.dynamic_conv"(%arg3, %arg2, %arg4) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 1, 1>}> : (tensor<1x5x5x1xf32>, tensor<3x3x1x1xf32>, tensor<2x2xi32>) -> tensor<1x5x5x1xf32>
    %2 = stablehlo.dynamic_broadcast_in_dim %arg0, %arg5, dims = [0, 1] : (tensor<?x4xf32>, tensor<2xi32>) -> tensor<?x?xf32>
    %3 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %4 = stablehlo.reshape %3 : (tensor<i32>) -> tensor<1xi32>
    %5 = stablehlo.dynamic_iota %4, dim = 0 : (tensor<1xi32>) -> tensor<?xi32>
    return %0, %1, %2, %5 : tensor<2x4xf32>, tensor<1x5x5x1xf32>, tensor<?x?xf32>, tensor<?xi32>
  }
}
