"""The fast executor (DESIGN.md sections 2 and 6): ``compile_module`` turns a module into an
``Executable``. ``compile.py`` is the pipeline (passes, then planning), ``groups.py`` plans
each fused group, ``fused.py`` generates numba kernels for elementwise groups,
``codegen.py`` generates Python for the rest of the language, ``executable.py`` runs it,
``values.py`` converts values at its boundary and ``errors.py`` locates its failures.
``runtime.py`` is the seam every kernel step runs through (allocation policies,
instrumentation layers), ``memory.py`` the static memory plan, ``liveness.py`` when values
are released, ``targets.py`` the registry of compilation targets."""
