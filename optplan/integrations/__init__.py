"""optplan inside other systems' compilers and runtimes: TVM's Relax pipeline (`tvm`),
ExecuTorch's memory planning (`executorch`). Each imports its system only when used;
`optplan.tvm` and `optplan.executorch` are the names users import."""
