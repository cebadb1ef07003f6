module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5xcomplex<f32>>, %arg1: tensor<5xcomplex<f32>>) -> (tensor<5xcomplex<f32>> {jax.result_info = "result[0]"}, tensor<5xcomplex<f32>> {jax.result_info = "result[1]"}, tensor<5xcomplex<f32>> {jax.result_info = "result[2]"}, tensor<5xf32> {jax.result_info = "result[3]"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<5xcomplex<f32>>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<5xcomplex<f32>>
    %2 = stablehlo.real %arg0 : (tensor<5xcomplex<f32>>) -> tensor<5xf32>
    %3 = stablehlo.imag %arg0 : (tensor<5xcomplex<f32>>) -> tensor<5xf32>
    %4 = stablehlo.negate %3 : tensor<5xf32>
    %5 = stablehlo.complex %2, %4 : tensor<5xcomplex<f32>>
    %6 = stablehlo.abs %arg0 : (tensor<5xcomplex<f32>>) -> tensor<5xf32>
    return %0, %1, %5, %6 : tensor<5xcomplex<f32>>, tensor<5xcomplex<f32>>, tensor<5xcomplex<f32>>, tensor<5xf32>
  }
}
