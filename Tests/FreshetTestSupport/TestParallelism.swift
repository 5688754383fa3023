import CTestParallelism

/// How many tests Swift Testing may run at once in this process when the test process set it
/// itself (`SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH`, 4 per online core, set by
/// Tests/CTestParallelism before the test runner starts); `nil` when the environment had a value
/// of its own.
public var testParallelismSetByTheProcess: Int? {
    let width = Int(freshet_test_parallelism_width())
    return width > 0 ? width : nil
}
