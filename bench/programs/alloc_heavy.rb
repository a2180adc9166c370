# An allocation-heavy Ruby program for mtheap-bench: each round builds a hash of 300,000 records
# (strings and small arrays), re-filters it five times (every filter builds a new hash while the
# old one is live, so the tables -- huge blocks of 4 and 12 MiB -- are rebuilt and dropped),
# then builds and sorts 400,000 strings.  Debian's ruby allocates with the system malloc.  A
# GC'd runtime rebuilding its big tables is where an allocator that keeps freed huge blocks
# resident for long grows past glibc (docs/PERFORMANCE.md, seventh session).  Everything is
# checked against values computed without the structures; FAIL and exit 3 on a mismatch.

def fail(msg)
  puts "FAIL workload=ruby reason=selfcheck #{msg}"
  exit 3
end

scale = 1
if ARGV.length == 2 && ARGV[0] == "--scale" && ARGV[1] =~ /\A[1-9][0-9]*\z/
  scale = ARGV[1].to_i
elsif !ARGV.empty?
  warn "usage: alloc_heavy.rb [--scale N]"
  exit 2
end

N = 300_000
M = 400_000
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
kept = 0
scale.times do |round|
  h = {}
  N.times { |i| h["key#{i}"] = [i, (i.to_s * 3), { a: i + round }] }
  fail("built #{h.size}") unless h.size == N
  len = 0
  h.each_value { |v| len += v[1].size }
  want = 0
  N.times { |i| want += 3 * i.to_s.size }
  fail("lengths #{len}, expected #{want}") unless len == want
  # five filters: each keeps the records whose id is not a multiple of 3 and brings back the
  # first 1000 of the previous hash, so the surviving ids are computable without the hash
  alive = (0...N).to_a
  5.times do
    h = h.select { |_k, v| v[0] % 3 != 0 }.merge(h.first(1000).to_h)
    alive = (alive.select { |i| i % 3 != 0 } + alive.first(1000)).uniq
  end
  fail("filtered to #{h.size}, expected #{alive.size}") unless h.size == alive.size
  fail("ids") unless h.values.sum { |v| v[0] } == alive.sum
  arr = (1..M).map { |i| "str#{i}" * (i % 5 + 1) }.sort
  fail("sort") unless arr.each_cons(2).all? { |a, b| a <= b }
  fail("strings") unless arr.size == M && arr.sum(&:size) == (1..M).sum { |i| "str#{i}".size * (i % 5 + 1) }
  kept = h.size
end
dt = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
printf("RESULT workload=ruby threads=1 metric=time value=%.6f unit=s better=lower entries=%d\n", dt, kept)
