#if canImport(Glibc)
import Glibc

/// glibc's allocator, asked to grow (and keep) its heaps a megabyte at a time.
///
/// By default a thread's arena grows by the pages it lacks: a warm `freshet hn --limit 500` made
/// some 430 `mprotect` calls of 4 KiB from the threads that decode stored answers, each one
/// taking the process's memory-map lock that the other threads' page faults wait on. With a pad
/// of 1 MiB set here it makes ~190 (~100 with `MALLOC_TOP_PAD_` set before it starts), and a warm
/// `hn` ran 2 %, a warm `feed` 4 % quicker against `--version` (61–101 alternated rounds).
/// Untouched padding costs address space, not memory. `MALLOC_TOP_PAD_` set by the user wins.
enum Allocator {
    static func configure() {
        guard getenv("MALLOC_TOP_PAD_") == nil,
              // `mallopt` is declared in <malloc.h>, which Swift's Glibc module does not import.
              let symbol = dlsym(nil, "mallopt") else { return }
        typealias Mallopt = @convention(c) (CInt, CInt) -> CInt
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        let topPad: CInt = -2  // M_TOP_PAD
        _ = mallopt(topPad, 1 << 20)
    }
}
#else
enum Allocator {
    static func configure() {}
}
#endif
