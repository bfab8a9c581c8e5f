# invalid-plan: buffers 'alloc' and 'alloc1' are live at the same time and share bytes [0, 24)
# weights bound as constants: w0, w1
# TVM pipeline: BindParams, DecomposeOpsForInference, DataflowUseInplaceCalls, LegalizeOps, AnnotateTIROpPattern, RewriteDataflowReshape, ToNonDataflow, RemovePurityChecking, CallTIRRewrite, StaticPlanBlockMemory, LowerAllocTensor, KillAfterLastUse
# from tvm.script import relax as R

@R.function
def main(x0: R.Tensor((2, 3), dtype="float32"), w0: R.Tensor((2, 3), dtype="float32"), w1: R.Tensor((6,), dtype="float32")):
    R.func_attr({"num_input": 1})
    with R.dataflow():
        v0: R.Tensor((2, 3), dtype="float32") = R.nn.relu(w0)
        v1: R.Tensor((2, 3), dtype="float32") = R.nn.relu(w0)
        v2: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")) = v0, v0
        v3: R.Tensor((2, 3), dtype="float32") = v2[0]
        v4: R.Tensor((6,), dtype="float32") = R.permute_dims(w1, axes=[0])
        R.output(v4)
    return v4
