import FreshetPostgres
import Testing

/// `PostgresStoreConfiguration(url:)`: what `--store postgres://…` and `FRESHET_DATABASE_URL`
/// accept, and what they refuse with a reason that never holds the password. (The store itself
/// runs the stores' shared tests in FreshetCacheTests, and the fleet's in FreshetProxyTests.)
@Suite("PostgreSQL store configuration from a URL")
struct PostgresStoreConfigurationTests {
    @Test("Every part is read; the password comes from the URL, else PGPASSWORD; the description never shows it")
    func parts() throws {
        let full = try PostgresStoreConfiguration(url: "postgresql://cache%40ops:s%3Acret@db.internal:6543/fleet%20cache",
                                                  environment: ["PGPASSWORD": "from-env"])
        #expect(full.username == "cache@ops")
        #expect(full.password == "s:cret")
        #expect(full.host == "db.internal")
        #expect(full.port == 6543)
        #expect(full.database == "fleet cache")
        #expect(full.tlsMode == .prefer)
        #expect(full.description == "postgres://cache@ops@db.internal:6543/fleet cache")
        #expect(!full.description.contains("s:cret"))

        let fromEnvironment = try PostgresStoreConfiguration(url: "postgres://freshet@127.0.0.1/freshet",
                                                             environment: ["PGPASSWORD": "from-env"])
        #expect(fromEnvironment.password == "from-env")
        #expect(fromEnvironment.port == 5432)
        let ipv6 = try PostgresStoreConfiguration(url: "postgres://u@[::1]:5433/d", environment: [:])
        #expect(ipv6.host == "::1", "the address the connection is made to, without URL brackets")
        #expect(ipv6.description == "postgres://u@[::1]:5433/d")
        #expect(try PostgresStoreConfiguration(url: "postgres://u@h/d", environment: [:]).password == nil)
    }

    @Test("sslmode as libpq spells it: disable; allow and prefer; require, verify-ca and verify-full",
          arguments: [("disable", PostgresStoreConfiguration.TLSMode.disable), ("allow", .prefer), ("prefer", .prefer),
                      ("require", .require), ("verify-ca", .require), ("verify-full", .require)])
    func sslmode(value: String, mode: PostgresStoreConfiguration.TLSMode) throws {
        #expect(try PostgresStoreConfiguration(url: "postgres://u@h/d?sslmode=\(value)", environment: [:]).tlsMode == mode)
    }

    @Test("A URL that cannot be used says why, without its password",
          arguments: [
              ("mysql://u:hunter2@h/d", "must start with postgres://"),
              ("postgres://u:hunter2@:5432/d", "names no host"),
              ("postgres://h/d", "names no user"),
              ("postgres://u:hunter2@h", "names no database"),
              ("postgres://u:hunter2@h/a/b", "names no database"),
              ("postgres://u:hunter2@h/d?sslmode=sometimes", "sslmode must be disable, prefer or require"),
              ("postgres://u:hunter2@h/d?pool=9", "unknown parameter \"pool\""),
              ("postgres://u:hunter2@h:port/d", "not a valid URL"),
          ])
    func refused(url: String, reason: String) {
        let error = #expect(throws: PostgresStoreError.self) {
            try PostgresStoreConfiguration(url: url, environment: [:])
        }
        let text = error.map(String.init(describing:)) ?? ""
        #expect(text.contains(reason), "\(text)")
        #expect(!text.contains("hunter2"))
    }
}
