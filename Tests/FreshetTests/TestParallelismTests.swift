import Foundation
import FreshetTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The test process caps how many tests run at once (Tests/CTestParallelism), so that the README's
/// plain `swift test` does not start all of them together and starve their bounded waits.
@Suite("Test support: at most 4 tests per core at once")
struct TestParallelismTests {
    @Test("The test process sets Swift Testing's parallelism, unless the environment already did")
    func parallelismIsCapped() throws {
        let value = ProcessInfo.processInfo.environment["SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH"]
        let width = try #require(value.flatMap { Int($0) }, "a width is set before the tests start")
        #expect(width >= 1)
        if let set = testParallelismSetByTheProcess {
            #expect(width == set)
            #expect(set == 4 * sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        }
    }
}
