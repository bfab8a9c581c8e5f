"""Running programs: the one interpreter (`interpreter`: a reference run with override
points), the planned replay in an arena (`replay`), planned programs with storages and
carved tensors (`lowered`), and the check of other planners' plans (`check`)."""
