# lang-threads in Ruby: the same task in every language (see README in this directory).
#   threads.rb TASK THREADS UNITS  ->  ANSWER <checksum> <units>  and  TIME <seconds>
M = 1000003

def unit_cpu(i)
  h = i
  200.times { |k| h = (h * 31 + k) % M }
  s = h.to_s * 3
  (h + s.length) % M
end

def unit_alloc(i)
  lst = (0...100).map { |k| (i + k).to_s }
  d = {}
  lst.each { |s| d[s] = s.length }
  (d.values.sum + lst.length) % M
end

task, nthreads, units = ARGV[0], ARGV[1].to_i, ARGV[2].to_i
fn = task == "cpu" ? method(:unit_cpu) : method(:unit_alloc)
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
ths = (0...nthreads).map do |t|
  Thread.new do
    s = 0
    i = t
    while i < units
      s += fn.call(i)
      i += nthreads
    end
    s
  end
end
total = ths.map(&:value).sum
elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
puts "ANSWER #{total % (1 << 31)} #{units}"
printf("TIME %.6f\n", elapsed)
