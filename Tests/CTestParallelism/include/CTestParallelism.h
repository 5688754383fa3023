#ifndef C_TEST_PARALLELISM_H
#define C_TEST_PARALLELISM_H

/// The number of tests Swift Testing may run at once that this module set for the test process
/// (`SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH`, 4 per online core), or 0 when the
/// environment already had a value of its own, which is left as it was.
int freshet_test_parallelism_width(void);

#endif
