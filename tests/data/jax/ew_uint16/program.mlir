module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xui16>, %arg1: tensor<2x3xui16>, %arg2: tensor<2x3xui16>) -> (tensor<2x3xui16> {jax.result_info = "result[0]"}, tensor<2x3xui16> {jax.result_info = "result[1]"}, tensor<2x3xui16> {jax.result_info = "result[2]"}, tensor<2x3xui16> {jax.result_info = "result[3]"}, tensor<2x3xui16> {jax.result_info = "result[4]"}, tensor<2x3xui16> {jax.result_info = "result[5]"}, tensor<2x3xui16> {jax.result_info = "result[6]"}, tensor<2x3xui16> {jax.result_info = "result[7]"}, tensor<2x3xui16> {jax.result_info = "result[8]"}, tensor<2x3xui16> {jax.result_info = "result[9]"}, tensor<2x3xui16> {jax.result_info = "result[10]"}, tensor<2x3xui16> {jax.result_info = "result[11]"}, tensor<2x3xui16> {jax.result_info = "result[12]"}, tensor<2x3xui16> {jax.result_info = "result[13]"}, tensor<2x3xui16> {jax.result_info = "result[14]"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xui16>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<2x3xui16>
    %2 = stablehlo.maximum %arg0, %arg1 : tensor<2x3xui16>
    %3 = stablehlo.minimum %arg0, %arg1 : tensor<2x3xui16>
    %4 = stablehlo.shift_left %arg0, %arg2 : tensor<2x3xui16>
    %5 = stablehlo.shift_right_logical %arg0, %arg2 : tensor<2x3xui16>
    %6 = stablehlo.shift_right_logical %arg0, %arg2 : tensor<2x3xui16>
    %7 = stablehlo.and %arg0, %arg1 : tensor<2x3xui16>
    %8 = stablehlo.or %arg0, %arg1 : tensor<2x3xui16>
    %9 = stablehlo.xor %arg0, %arg1 : tensor<2x3xui16>
    %10 = stablehlo.not %arg0 : tensor<2x3xui16>
    %11 = stablehlo.divide %arg0, %arg1 : tensor<2x3xui16>
    %12 = stablehlo.remainder %arg0, %arg1 : tensor<2x3xui16>
    %13 = call @floor_divide(%arg0, %arg1) : (tensor<2x3xui16>, tensor<2x3xui16>) -> tensor<2x3xui16>
    %14 = stablehlo.subtract %arg0, %arg1 : tensor<2x3xui16>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14 : tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>, tensor<2x3xui16>
  }
  func.func private @floor_divide(%arg0: tensor<2x3xui16>, %arg1: tensor<2x3xui16>) -> tensor<2x3xui16> {
    %0 = stablehlo.divide %arg0, %arg1 : tensor<2x3xui16>
    return %0 : tensor<2x3xui16>
  }
}
