module @jit__fun attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}) -> (tensor<2x3xf32> {jax.result_info = "result", mhlo.sharding = "{devices=[2,1]<=[2]}"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<2x3xf32>) -> tensor<1x3xf32>
    %2 = call @shmap_body(%1) : (tensor<1x3xf32>) -> tensor<1x3xf32>
    %3 = stablehlo.custom_call @Sharding(%2) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<1x3xf32>) -> tensor<1x3xf32>
    %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {backend_config = "", mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<1x3xf32>) -> tensor<2x3xf32>
    return %4 : tensor<2x3xf32>
  }
  func.func private @shmap_body(%arg0: tensor<1x3xf32>) -> (tensor<1x3xf32> {jax.result_info = "[('i',), None]"}) {
    %0 = stablehlo.reshape %arg0 : (tensor<1x3xf32>) -> tensor<3xf32>
    %1 = "stablehlo.all_reduce"(%0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %11 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %11 : tensor<f32>
    }) : (tensor<3xf32>) -> tensor<3xf32>
    %c = stablehlo.constant dense<1> : tensor<ui32>
    %c_0 = stablehlo.constant dense<2> : tensor<ui32>
    %2 = stablehlo.partition_id : tensor<ui32>
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
