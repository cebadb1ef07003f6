module {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32>, !stablehlo.token) {
    %0 = stablehlo.after_all  : !stablehlo.token
    %1 = "stablehlo.send"(%arg0, %0) <{channel_handle = #stablehlo.channel_handle<handle = 7, type = 2>, is_host_transfer = true}> : (tensor<3xf32>, !stablehlo.token) -> !stablehlo.token
    %2:2 = "stablehlo.recv"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 8, type = 3>, is_host_transfer = true}> : (!stablehlo.token) -> (tensor<3xf32>, !stablehlo.token)
    %3:2 = "stablehlo.infeed"(%2#1) <{infeed_config = "cfg"}> : (!stablehlo.token) -> (tensor<3xf32>, !stablehlo.token)
    %4 = "stablehlo.outfeed"(%3#0, %3#1) <{outfeed_config = "out"}> : (tensor<3xf32>, !stablehlo.token) -> !stablehlo.token
    return %2#0, %4 : tensor<3xf32>, !stablehlo.token
  }
}
