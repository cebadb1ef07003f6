module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x3xf32>, %arg1: tensor<3x2xf32>, %arg2: tensor<2x3x3xf32>) -> (tensor<4x2xf32> {jax.result_info = "result[0]"}, tensor<2x3x3xf32> {jax.result_info = "result[1]"}, tensor<4x2xf32> {jax.result_info = "result[2]"}, tensor<4x2xf32> {jax.result_info = "result[3]"}, tensor<3x3xf32> {jax.result_info = "result[4]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %1 = stablehlo.dot_general %arg2, %arg2, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    %2 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %3 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
    %4 = stablehlo.dot_general %arg0, %3, contracting_dims = [1] x [1] : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
    %5 = stablehlo.slice %arg0 [0:1, 0:3] : (tensor<4x3xf32>) -> tensor<1x3xf32>
    %6 = stablehlo.reshape %5 : (tensor<1x3xf32>) -> tensor<3xf32>
    %7 = stablehlo.slice %arg1 [0:3, 0:1] : (tensor<3x2xf32>) -> tensor<3x1xf32>
    %8 = stablehlo.reshape %7 : (tensor<3x1xf32>) -> tensor<3xf32>
    %9 = stablehlo.broadcast_in_dim %6, dims = [0] : (tensor<3xf32>) -> tensor<3x1xf32>
    %10 = stablehlo.broadcast_in_dim %8, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %11 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<3x1xf32>) -> tensor<3x3xf32>
    %12 = stablehlo.broadcast_in_dim %10, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<3x3xf32>
    %13 = stablehlo.multiply %11, %12 : tensor<3x3xf32>
    return %0, %1, %2, %4, %13 : tensor<4x2xf32>, tensor<2x3x3xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<3x3xf32>
  }
}
