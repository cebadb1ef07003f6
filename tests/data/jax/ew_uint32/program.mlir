module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xui32>, %arg1: tensor<2x3xui32>, %arg2: tensor<2x3xui32>) -> (tensor<2x3xui32> {jax.result_info = "result[0]"}, tensor<2x3xui32> {jax.result_info = "result[1]"}, tensor<2x3xui32> {jax.result_info = "result[2]"}, tensor<2x3xui32> {jax.result_info = "result[3]"}, tensor<2x3xui32> {jax.result_info = "result[4]"}, tensor<2x3xui32> {jax.result_info = "result[5]"}, tensor<2x3xui32> {jax.result_info = "result[6]"}, tensor<2x3xui32> {jax.result_info = "result[7]"}, tensor<2x3xui32> {jax.result_info = "result[8]"}, tensor<2x3xui32> {jax.result_info = "result[9]"}, tensor<2x3xui32> {jax.result_info = "result[10]"}, tensor<2x3xui32> {jax.result_info = "result[11]"}, tensor<2x3xui32> {jax.result_info = "result[12]"}, tensor<2x3xui32> {jax.result_info = "result[13]"}, tensor<2x3xui32> {jax.result_info = "result[14]"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xui32>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<2x3xui32>
    %2 = stablehlo.maximum %arg0, %arg1 : tensor<2x3xui32>
    %3 = stablehlo.minimum %arg0, %arg1 : tensor<2x3xui32>
    %4 = stablehlo.shift_left %arg0, %arg2 : tensor<2x3xui32>
    %5 = stablehlo.shift_right_logical %arg0, %arg2 : tensor<2x3xui32>
    %6 = stablehlo.shift_right_logical %arg0, %arg2 : tensor<2x3xui32>
    %7 = stablehlo.and %arg0, %arg1 : tensor<2x3xui32>
    %8 = stablehlo.or %arg0, %arg1 : tensor<2x3xui32>
    %9 = stablehlo.xor %arg0, %arg1 : tensor<2x3xui32>
    %10 = stablehlo.not %arg0 : tensor<2x3xui32>
    %11 = stablehlo.divide %arg0, %arg1 : tensor<2x3xui32>
    %12 = stablehlo.remainder %arg0, %arg1 : tensor<2x3xui32>
    %13 = call @floor_divide(%arg0, %arg1) : (tensor<2x3xui32>, tensor<2x3xui32>) -> tensor<2x3xui32>
    %14 = stablehlo.subtract %arg0, %arg1 : tensor<2x3xui32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14 : tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<2x3xui32>
  }
  func.func private @floor_divide(%arg0: tensor<2x3xui32>, %arg1: tensor<2x3xui32>) -> tensor<2x3xui32> {
    %0 = stablehlo.divide %arg0, %arg1 : tensor<2x3xui32>
    return %0 : tensor<2x3xui32>
  }
}
