/* Loaded by bare name from libca_runpath_outer.so; only its RUNPATH finds this library. */
int ca_runpath_inner_marker(void);

/* Returns a constant the loader checks. */
int ca_runpath_inner_marker(void)
{
    return 42;
}
