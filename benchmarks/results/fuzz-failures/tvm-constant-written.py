# constant-written: 13:5: the reference run failed: kernel 'add_inplace' writes in place, but every argument it could write is read-only (a parameter or constant, or a view of one)
# weights bound as constants: w0, w1, w2, w3
# TVM pipeline: BindParams, DecomposeOpsForInference, DataflowUseInplaceCalls, LegalizeOps, AnnotateTIROpPattern, RewriteDataflowReshape, ToNonDataflow, RemovePurityChecking, CallTIRRewrite, StaticPlanBlockMemory, LowerAllocTensor, KillAfterLastUse
# from tvm.script import relax as R

@R.function
def main(x0: R.Tensor((1, 2, 2, 2), dtype="float32"), w0: R.Tensor((2,), dtype="float32"), w1: R.Tensor((2,), dtype="float32"), w2: R.Tensor((2,), dtype="float32"), w3: R.Tensor((2,), dtype="float32")):
    R.func_attr({"num_input": 1})
    with R.dataflow():
        v0: R.Tuple(R.Tensor((1, 2, 2, 2), dtype="float32"), R.Tensor((2,), dtype="float32"), R.Tensor((2,), dtype="float32")) = R.nn.batch_norm(x0, w0, w1, w2, w3, axis=1, epsilon=1.0000000000000001e-05)
        v1: R.Tensor((1, 2, 2, 2), dtype="float32") = v0[0]
        R.output(v1)
    return v1
