module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5xcomplex<f64>>, %arg1: tensor<5xcomplex<f64>>) -> (tensor<5xcomplex<f64>> {jax.result_info = "result[0]"}, tensor<5xcomplex<f64>> {jax.result_info = "result[1]"}, tensor<5xcomplex<f64>> {jax.result_info = "result[2]"}, tensor<5xf64> {jax.result_info = "result[3]"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<5xcomplex<f64>>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<5xcomplex<f64>>
    %2 = stablehlo.real %arg0 : (tensor<5xcomplex<f64>>) -> tensor<5xf64>
    %3 = stablehlo.imag %arg0 : (tensor<5xcomplex<f64>>) -> tensor<5xf64>
    %4 = stablehlo.negate %3 : tensor<5xf64>
    %5 = stablehlo.complex %2, %4 : tensor<5xcomplex<f64>>
    %6 = stablehlo.abs %arg0 : (tensor<5xcomplex<f64>>) -> tensor<5xf64>
    return %0, %1, %5, %6 : tensor<5xcomplex<f64>>, tensor<5xcomplex<f64>>, tensor<5xcomplex<f64>>, tensor<5xf64>
  }
}
