// Caps how many tests Swift Testing runs at once in this test process, before the test runner
// reads its configuration.
//
// Swift Testing (Swift 6.3) starts every test of the run at once unless
// SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH says otherwise. Many of Freshet's tests start a
// simulator, a proxy or a child process and wait for it with a bounded wait; 687 of them at once
// on a 2-core machine starved those waits (61 failed in a plain `swift test` on 2026-11-29) while
// at most 8 at a time passed. The README's test command is plain `swift test`, so the cap is set
// here, by the test process itself: a constructor runs when the executable is loaded, before
// `main` hands over to the test runner, which reads the variable when it starts. A value already
// in the environment (or `swift test --no-parallel`) wins.

#include "CTestParallelism.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *const variable = "SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH";
static int width_set = 0;

__attribute__((constructor))
static void freshet_cap_test_parallelism(void) {
    if (getenv(variable) != NULL) return;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long width = cores > 0 ? 4 * cores : 8;
    char text[24];
    snprintf(text, sizeof text, "%ld", width);
    if (setenv(variable, text, 0) == 0) width_set = (int)width;
}

int freshet_test_parallelism_width(void) {
    return width_set;
}
