#loc3 = loc("-":3:24)
#loc5 = loc("-":5:8)
#loc6 = loc("-":5:25)
module {
  func.func private @mesh() loc(#loc1)
  func.func public @main(%arg0: tensor<f32> loc("-":3:24)) -> tensor<f32> {
    %0 = "stablehlo.all_reduce"(%arg0) <{replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh, axes = [#stablehlo.axis_ref<name = "x", sub_axis_info = (1)2>, #stablehlo.axis_ref<name = "y">]>}> ({
    ^bb0(%arg1: tensor<f32> loc("-":5:8), %arg2: tensor<f32> loc("-":5:25)):
      %1 = stablehlo.add %arg1, %arg2 : tensor<f32> loc(#loc7)
      stablehlo.return %1 : tensor<f32> loc(#loc8)
    }) : (tensor<f32>) -> tensor<f32> loc(#loc4)
    return %0 : tensor<f32> loc(#loc9)
  } loc(#loc2)
} loc(#loc)
#loc = loc("-":1:1)
#loc1 = loc("-":2:1)
#loc2 = loc("-":3:1)
#loc4 = loc("-":4:8)
#loc7 = loc("-":6:10)
#loc8 = loc("-":7:5)
#loc9 = loc("-":9:3)
