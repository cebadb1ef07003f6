module @pmap__pmap_fn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {
  func.func public @main(%arg0: tensor<1x3xf32>) -> (tensor<1x3xf32> {jax.result_info = ""}) {
    %0 = stablehlo.reshape %arg0 : (tensor<1x3xf32>) -> tensor<3xf32>
    %1 = "stablehlo.all_reduce"(%0) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %11 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %11 : tensor<f32>
    }) : (tensor<3xf32>) -> tensor<3xf32>
    %c = stablehlo.constant dense<1> : tensor<ui32>
    %c_0 = stablehlo.constant dense<2> : tensor<ui32>
    %2 = stablehlo.replica_id : tensor<ui32>
    %3 = stablehlo.divide %2, %c : tensor<ui32>
    %4 = stablehlo.remainder %3, %c_0 : tensor<ui32>
    %5 = stablehlo.convert %4 : (tensor<ui32>) -> tensor<i32>
    %6 = stablehlo.convert %5 : (tensor<i32>) -> tensor<f32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %8 = stablehlo.multiply %0, %7 : tensor<3xf32>
    %9 = stablehlo.add %1, %8 : tensor<3xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    return %10 : tensor<1x3xf32>
  }
}
