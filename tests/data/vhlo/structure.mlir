module {
  func.func private @inc(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<2x3xf32>
    %0 = stablehlo.add %arg0, %cst : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2xui32>) -> (tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xui32>, tensor<4xui32>, tensor<2x3xf32>) {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %1 = call @inc(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = stablehlo.custom_call @my_target(%arg0) {api_version = 2 : i32, backend_config = "cfg", has_side_effect = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = stablehlo.reverse %arg0, dims = [1] : tensor<2x3xf32>
    %output_state, %output = stablehlo.rng_bit_generator %arg1, algorithm = THREE_FRY : (tensor<2xui32>) -> (tensor<2xui32>, tensor<4xui32>)
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = "stablehlo.select_and_scatter"(%arg0, %arg0, %cst) <{window_dimensions = array<i64: 1, 1>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %5 = stablehlo.compare GE, %arg2, %arg3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %5 : tensor<i1>
    }, {
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %5 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %5 : tensor<f32>
    }) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    return %0, %1, %2, %3, %output_state, %output, %4 : tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xui32>, tensor<4xui32>, tensor<2x3xf32>
  }
}
