"""The code behind bench/run and bench/proxy-load (the entry scripts put bench/ on sys.path).

common       paths, log, fail (BenchError), run, medians, number formats, Markdown tables
processes    servers stopped by process group, free ports, timing a command whole (wall, CPU, RSS),
             time to first output, CPU and RSS of live process trees
simulator    freshet-sim and a byte-counting relay in front of it
build        swift build into .build-bench, bench/.venv for the Python peers, apt-get for tools
machine      notes on the machine, its load, tool versions and the build
report       Headline and Targets, bench/RESULTS.md and the README headline
cases_*      bench/run's cases: hn, throughput, feed, warm, proxy_load (runs bench/proxy-load)
proxies      bench/proxy-load's servers (freshet proxy, nginx, Varnish), raw GET, wrk
cases_proxy  bench/proxy-load's cases: peers and load
cases_fleet  bench/proxy-load's fleet case: two proxies on one PostgreSQL vs one on SQLite
"""
