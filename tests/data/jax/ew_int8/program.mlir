module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xi8>, %arg1: tensor<2x3xi8>, %arg2: tensor<2x3xi8>) -> (tensor<2x3xi8> {jax.result_info = "result[0]"}, tensor<2x3xi8> {jax.result_info = "result[1]"}, tensor<2x3xi8> {jax.result_info = "result[2]"}, tensor<2x3xi8> {jax.result_info = "result[3]"}, tensor<2x3xi8> {jax.result_info = "result[4]"}, tensor<2x3xi8> {jax.result_info = "result[5]"}, tensor<2x3xi8> {jax.result_info = "result[6]"}, tensor<2x3xi8> {jax.result_info = "result[7]"}, tensor<2x3xi8> {jax.result_info = "result[8]"}, tensor<2x3xi8> {jax.result_info = "result[9]"}, tensor<2x3xi8> {jax.result_info = "result[10]"}, tensor<2x3xi8> {jax.result_info = "result[11]"}, tensor<2x3xi8> {jax.result_info = "result[12]"}, tensor<2x3xi8> {jax.result_info = "result[13]"}, tensor<2x3xi8> {jax.result_info = "result[14]"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xi8>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<2x3xi8>
    %2 = stablehlo.maximum %arg0, %arg1 : tensor<2x3xi8>
    %3 = stablehlo.minimum %arg0, %arg1 : tensor<2x3xi8>
    %4 = stablehlo.shift_left %arg0, %arg2 : tensor<2x3xi8>
    %5 = stablehlo.shift_right_arithmetic %arg0, %arg2 : tensor<2x3xi8>
    %6 = stablehlo.shift_right_logical %arg0, %arg2 : tensor<2x3xi8>
    %7 = stablehlo.and %arg0, %arg1 : tensor<2x3xi8>
    %8 = stablehlo.or %arg0, %arg1 : tensor<2x3xi8>
    %9 = stablehlo.xor %arg0, %arg1 : tensor<2x3xi8>
    %10 = stablehlo.not %arg0 : tensor<2x3xi8>
    %11 = stablehlo.divide %arg0, %arg1 : tensor<2x3xi8>
    %12 = stablehlo.remainder %arg0, %arg1 : tensor<2x3xi8>
    %13 = call @floor_divide(%arg0, %arg1) : (tensor<2x3xi8>, tensor<2x3xi8>) -> tensor<2x3xi8>
    %14 = stablehlo.subtract %arg0, %arg1 : tensor<2x3xi8>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14 : tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>, tensor<2x3xi8>
  }
  func.func private @floor_divide(%arg0: tensor<2x3xi8>, %arg1: tensor<2x3xi8>) -> tensor<2x3xi8> {
    %0 = stablehlo.divide %arg0, %arg1 : tensor<2x3xi8>
    %1 = stablehlo.sign %arg0 : tensor<2x3xi8>
    %2 = stablehlo.sign %arg1 : tensor<2x3xi8>
    %3 = stablehlo.compare NE, %1, %2, SIGNED : (tensor<2x3xi8>, tensor<2x3xi8>) -> tensor<2x3xi1>
    %4 = stablehlo.remainder %arg0, %arg1 : tensor<2x3xi8>
    %c = stablehlo.constant dense<0> : tensor<i8>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i8>) -> tensor<2x3xi8>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<2x3xi8>, tensor<2x3xi8>) -> tensor<2x3xi1>
    %7 = stablehlo.and %3, %6 : tensor<2x3xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i8>
    %8 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i8>) -> tensor<2x3xi8>
    %9 = stablehlo.subtract %0, %8 : tensor<2x3xi8>
    %10 = call @_where(%7, %9, %0) : (tensor<2x3xi1>, tensor<2x3xi8>, tensor<2x3xi8>) -> tensor<2x3xi8>
    return %10 : tensor<2x3xi8>
  }
  func.func private @_where(%arg0: tensor<2x3xi1>, %arg1: tensor<2x3xi8>, %arg2: tensor<2x3xi8>) -> tensor<2x3xi8> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<2x3xi1>, tensor<2x3xi8>
    return %0 : tensor<2x3xi8>
  }
}
