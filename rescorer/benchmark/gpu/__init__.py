"""Everything a GPU must show, in one call (``bash benchmarks/gpu.sh OUT``): exactness against the CPU, speed
against the peer and the measured peak, the whole job, and scale-out, each stage capped in time and written to
its own JSON as it goes, then one table. ``GPU_REHEARSAL=1`` runs the same code on the CPU at tiny sizes."""
