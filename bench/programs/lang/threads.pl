# lang-threads in Perl (ithreads: each thread is a copy of the interpreter): the same task in
# every language (see README in this directory).
#   threads.pl TASK THREADS UNITS  ->  ANSWER <checksum> <units>  and  TIME <seconds>
use strict;
use warnings;
use threads;
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);

my $M = 1000003;

sub unit_cpu {
  my ($i) = @_;
  my $h = $i;
  $h = ($h * 31 + $_) % $M for 0 .. 199;
  my $s = "$h" x 3;
  return ($h + length($s)) % $M;
}

sub unit_alloc {
  my ($i) = @_;
  my @lst = map { "" . ($i + $_) } 0 .. 99;
  my %d = map { $_ => length($_) } @lst;
  my $t = 0;
  $t += $_ for values %d;
  return ($t + scalar(@lst)) % $M;
}

my ($task, $n, $units) = @ARGV;
my $fn = $task eq "cpu" ? \&unit_cpu : \&unit_alloc;
my $t0 = clock_gettime(CLOCK_MONOTONIC);
my @ths = map {
  my $t = $_;
  threads->create(sub {
    my $s = 0;
    for (my $i = $t; $i < $units; $i += $n) { $s += $fn->($i); }
    return $s;
  });
} 0 .. $n - 1;
my $total = 0;
$total += $_->join() for @ths;
my $elapsed = clock_gettime(CLOCK_MONOTONIC) - $t0;
printf("ANSWER %d %d\n", $total % (1 << 31), $units);
printf("TIME %.6f\n", $elapsed);
